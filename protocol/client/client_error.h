// Error conventions of Strata's client side: the C++ client library (tools/client/) and a
// broker calling another broker.
//
// Every fallible call returns strata::Status / strata::Result<T>. The Status message starts with
// an upper-case error name followed by ": ":
//   - a Kafka error: its Kafka constant name (e.g. "UNKNOWN_TOPIC_OR_PARTITION: topic 'x'"),
//     with Errc::not_found / already_exists / invalid_argument by kind;
//   - a connection problem (refused, timed out, closed, unparsable frame): "CONNECTION: ...",
//     Errc::io_error.
// Shared by the client library and broker-to-broker calls. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/base/result.h"
#include "protocol/wire/errors.h"

namespace strata::client {

// A Status for a non-zero Kafka error code; `context` says what failed ("topic 'x'"), `detail` is
// the broker's error message (may be empty).
Status kafka_status(int16_t code, std::string_view context, std::string_view detail = {});
inline Status kafka_status(protocol::ErrorCode code, std::string_view context,
                           std::string_view detail = {}) {
  return kafka_status(protocol::error_value(code), context, detail);
}
// A Status for a connection-level failure (Errc::io_error, "CONNECTION: ...").
Status connection_status(std::string_view what);

// True when `s` came from connection_status() (the broker could not be reached or talked to).
inline bool is_connection_error(const Status& s) { return s.code() == Errc::io_error; }
// The leading error name of a client Status ("UNKNOWN_TOPIC_OR_PARTITION", "CONNECTION", ...),
// or "" for ok.
std::string error_name_of(const Status& s);

}  // namespace strata::client
