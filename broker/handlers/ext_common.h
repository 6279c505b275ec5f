// Framing helpers of the extension APIs (protocol/ext/api_keys.h): the request body is one
// Protobuf message (the rest of the frame after request header v2); the response is response
// header v1 followed by one Protobuf message. Used by broker/handlers/ext_*.cc on the connection's
// strand.
#pragma once

#include <google/protobuf/message_lite.h>

#include <memory>
#include <string>

#include "broker/handler.h"
#include "protocol/wire/errors.h"

namespace strata::pkindex {
class PkState;
}  // namespace strata::pkindex
namespace strata::broker {
struct TopicEntry;
}  // namespace strata::broker

namespace strata::broker::handlers {

// The PK state serving one partition of an extension request, or the Kafka error to answer for it.
struct PkPartition {
  std::shared_ptr<pkindex::PkState> state;  // null on error
  protocol::ErrorCode error = protocol::ErrorCode::none;
  std::string message;
};
// `topic` is the registry's entry for `name` (null when unknown): UNKNOWN_TOPIC_OR_PARTITION for an
// unknown topic or partition, INVALID_REQUEST for a log topic, KAFKA_STORAGE_ERROR when the state
// cannot be opened or is offline. (ext_common.cc)
PkPartition resolve_pk_partition(RequestContext& ctx, const TopicEntry* topic,
                                 const std::string& name, int32_t partition);

// Parses the rest of `body` into `msg`; false on undecodable bytes.
inline bool parse_ext_body(protocol::Reader& body, google::protobuf::MessageLite& msg) {
  const size_t n = body.remaining();
  const bool ok = msg.ParseFromArray(body.current(), static_cast<int>(n));
  if (n > 0) body.read_raw(n);
  return ok;
}

// Every extension response has a top-level error_code; a non-zero one is counted in the error
// metrics, as RequestContext::respond does for the Kafka APIs.
template <typename Msg>
void respond_ext(RequestContext& ctx, const Msg& msg) {
  if (msg.error_code() != 0) {
    note_response_error(ctx.broker, ctx.api_key, static_cast<int16_t>(msg.error_code()));
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
  ctx.responder.send(std::move(f));
}

}  // namespace strata::broker::handlers
