// The bytes of one request frame as read from a socket, and one response ready to be written.
// A RequestFrame is owned by the request while its handler runs (decoded requests hold views into
// it). A ResponseFrame may reference log file ranges, written with sendfile(2). Value types.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "protocol/wire/records.h"

namespace strata::broker {

struct RequestFrame {
  // The frame without its 4-byte size prefix. Mutable: Produce rewrites batch headers in place.
  std::vector<uint8_t> bytes;
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
};

struct ResponseFrame {
  std::vector<uint8_t> bytes;  // includes the 4-byte size prefix
  // Parts spliced into `bytes` at the given position (file ranges or borrowed memory).
  std::vector<std::pair<size_t, protocol::RecordsPart>> external;
};

}  // namespace strata::broker
