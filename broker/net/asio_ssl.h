// Boost.Asio's SSL stream, included after broker/net/asio.h (see there why the order matters).
#pragma once

// clang-format off
#include "broker/net/asio.h"
#include <boost/asio/ssl.hpp>
// clang-format on
