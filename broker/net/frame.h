// The bytes of one request frame as read from a socket, and one response ready to be written.
// A RequestFrame is owned by the request while its handler runs (decoded requests hold views into
// it). A ResponseFrame may reference log file ranges, written with sendfile(2). Value types.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/net/limits.h"
#include "protocol/wire/records.h"

namespace strata::broker {

struct RequestFrame {
  RequestFrame() = default;
  RequestFrame(const RequestFrame&) = delete;
  RequestFrame& operator=(const RequestFrame&) = delete;
  // Gives the body's bytes back to the broker's request pool when the request is done with them,
  // and the buffer too, for a later request.
  ~RequestFrame() {
    if (!pool) return;
    pool->release(pooled_bytes);
    pool->give_buffer(std::move(bytes));
  }
  // The frame without its 4-byte size prefix. Mutable: Produce rewrites batch headers in place.
  BodyBytes bytes;
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  // A bare SASL token (after SaslHandshake v0): no Kafka header, api_key etc. are not set.
  bool raw_sasl_token = false;
  std::shared_ptr<RequestMemoryPool> pool;  // null: not pooled
  int64_t pooled_bytes = 0;
};

struct ResponseFrame {
  std::vector<uint8_t> bytes;  // includes the 4-byte size prefix
  // Parts spliced into `bytes` at the given position (file ranges or borrowed memory).
  std::vector<std::pair<size_t, protocol::RecordsPart>> external;
  // Client-quota throttle (KIP-219): once this response is written, the connection reads no
  // further request for this long.
  int64_t throttle_ms = 0;
  // Close the connection once this response is written (a failed authentication).
  bool close_after = false;
  // Non-empty: the response could not be encoded (why); nothing is sent and the connection
  // closes, its frames before this one written first (Responder::send).
  std::string unencodable;
};

}  // namespace strata::broker
