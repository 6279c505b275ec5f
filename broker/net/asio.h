// Boost.Asio, included through one place: Boost 1.74's awaitable.hpp uses std::exchange without
// including <utility>, which breaks under GCC 12 in C++20 mode. <utility> must come first, so
// include sorting is off here.
#pragma once

// clang-format off
#include <utility>
#include <boost/asio.hpp>
// clang-format on
