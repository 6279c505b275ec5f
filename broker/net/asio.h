// Boost.Asio, included through one place: Boost 1.74's awaitable.hpp uses std::exchange without
// including <utility>, which breaks under GCC 12 in C++20 mode.
#pragma once

#include <utility>

#include <boost/asio.hpp>
