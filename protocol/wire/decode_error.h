// DecodeError: the one exception type of the protocol layer, thrown by Reader and by generated
// decode() functions when wire input is malformed (truncated, bad varint, hostile length...).
// Callers at the connection boundary catch it and close or reject the request.
// Value type; any thread.
#pragma once

#include <stdexcept>
#include <string>

namespace strata::protocol {

class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace strata::protocol
