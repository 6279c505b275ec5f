// Framing helpers of the extension APIs (protocol/ext/api_keys.h): the request body is one
// Protobuf message (the rest of the frame after request header v2); the response is response
// header v1 followed by one Protobuf message. Used by broker/handlers/ext_*.cc on the connection's
// strand.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "broker/handler.h"
#include "protocol/wire/errors.h"

namespace strata::pkindex {
class PkState;
namespace typed {
class Projection;
}  // namespace typed
}  // namespace strata::pkindex
namespace strata::broker {
struct TopicEntry;
}  // namespace strata::broker

namespace strata::broker::handlers {

// The extension APIs' Protobuf messages carry Kafka error codes in an int32 `error_code` field
// (same numbering as the Kafka APIs). These two are the only place an ErrorCode meets that field.
template <typename Msg>
void set_ext_error(Msg& msg, protocol::ErrorCode e) {
  msg.set_error_code(protocol::error_value(e));
}
template <typename Msg>
protocol::ErrorCode ext_error(const Msg& msg) {
  return static_cast<protocol::ErrorCode>(msg.error_code());
}

// The PK state serving one partition of an extension request, or the Kafka error to answer for it.
struct PkPartition {
  std::shared_ptr<pkindex::PkState> state;  // null on error
  protocol::ErrorCode error = protocol::ErrorCode::none;
  std::string message;
};
// `topic` is the registry's entry for `name` (null when unknown): UNKNOWN_TOPIC_OR_PARTITION for an
// unknown topic or partition (or a table deleted meanwhile), INVALID_REQUEST for a log topic,
// KAFKA_STORAGE_ERROR when the state cannot be opened or is offline. In cluster mode only the
// partition's leader serves (NOT_LEADER_OR_FOLLOWER elsewhere), or with `any_replica` every broker
// holding a replica (a follower's state holds committed rows only). (ext_common.cc)
PkPartition resolve_pk_partition(RequestContext& ctx, const TopicEntry* topic,
                                 const std::string& name, int32_t partition,
                                 bool any_replica = false);

// Column projection of typed rows (Lookup, PrefixLookup, Scan: a request's `columns`; none = whole
// rows). docs/typed-tables.md, "Projection".
class RowProjection {
 public:
  RowProjection();
  ~RowProjection();
  // Empty when fine; else the INVALID_REQUEST message (columns on a table that is not typed, an
  // empty or repeated name, more than kMaxColumns).
  template <typename Names>
  std::string init(const TopicEntry& topic, const Names& columns) {
    return init(topic, std::vector<std::string>(columns.begin(), columns.end()));
  }
  std::string init(const TopicEntry& topic, std::vector<std::string> columns);
  bool active() const { return projection_ != nullptr; }
  // The row reduced to the columns (each present, null when the row lacks it).
  void apply(std::string& row) const;
  static constexpr size_t kMaxColumns = 1000;

 private:
  std::unique_ptr<pkindex::typed::Projection> projection_;
};

// Parses the rest of `body` into `msg`; false on undecodable bytes.
inline bool parse_ext_body(protocol::Reader& body, google::protobuf::MessageLite& msg) {
  const size_t n = body.remaining();
  const bool ok = msg.ParseFromArray(body.current(), static_cast<int>(n));
  if (n > 0) body.read_raw(n);
  return ok;
}

// Bounds an extension request body must keep before it is decoded. Protobuf materialises every
// element of a repeated field (a 4-byte key on the wire becomes a heap string plus a slot, ~60
// bytes), so a 100 MiB frame of tiny keys would decode to GiBs before a handler could count them.
struct ExtBodyLimits {
  size_t max_bytes = std::numeric_limits<size_t>::max();  // the serialised body
  // Field numbers from the top-level message down to one repeated length-delimited field (e.g.
  // Lookup's topics -> partitions -> keys), and how many of them the whole body may hold.
  std::span<const int> counted_path;
  size_t max_count = std::numeric_limits<size_t>::max();
};
enum class ExtBody { ok, undecodable, too_large, too_many };

// Checks `limits` on the wire bytes (a walk of the tags with CodedInputStream, allocating
// nothing), then parses the body into `msg`. The body is consumed whatever the outcome, so the
// handler answers and the connection stays usable. (ext_common.cc)
ExtBody parse_ext_body(protocol::Reader& body, google::protobuf::MessageLite& msg,
                       const ExtBodyLimits& limits);

// The occurrences of the length-delimited field at `path` in a Protobuf wire image, counted
// without decoding it; the walk stops as soon as the count passes `stop_after`. nullopt when the
// bytes are not a well-formed message. (ext_common.cc)
std::optional<size_t> count_wire_fields(std::span<const uint8_t> wire, std::span<const int> path,
                                        size_t stop_after);

// A response byte budget from a request's max_bytes (already checked >= 0): 0 takes the
// default; anything above `cap` is clamped to it, so one answer stays a bounded allocation; and
// to what is left of queued.max.response.bytes, at least 1 (an answer carries at least one row),
// so clients that do not read their answers cannot make the broker hold more than that bound.
size_t response_budget(const Services& svc, int64_t requested, size_t default_bytes, size_t cap);

// Every extension response has a top-level error_code; a non-zero one is counted in the error
// metrics, as RequestContext::respond does for the Kafka APIs.
template <typename Msg>
void respond_ext(RequestContext& ctx, const Msg& msg) {
  if (const protocol::ErrorCode e = ext_error(msg); e != protocol::ErrorCode::none) {
    note_response_error(ctx.svc, ctx.api_key, e);
  }
  const size_t body = msg.ByteSizeLong();  // caches the sizes for the serialisation below
  protocol::Writer w(body + 16);
  w.write_int32(0);  // size, patched below
  protocol::ResponseHeader h;
  h.correlation_id = ctx.frame->correlation_id;
  h.encode(w, protocol::response_header_version(ctx.api_key, ctx.version));
  // Serialised once, straight into the frame (no intermediate string).
  auto& buf = w.buffer();
  const size_t at = buf.size();
  buf.resize(at + body);
  msg.SerializeWithCachedSizesToArray(buf.data() + at);
  w.patch_int32(0, static_cast<int32_t>(w.total_size() - 4));
  ResponseFrame f;
  f.bytes = std::move(buf);
  f.throttle_ms = request_quota_throttle(ctx);  // no throttle field: the mute alone
  ctx.responder.send(std::move(f));
}

}  // namespace strata::broker::handlers
