// The request-handler contract. Each Kafka API is one HandlerDef (key, supported version range,
// function) defined in broker/handlers/<api>.cc; the table in dispatch.cc is the only input to the
// ApiVersions answer, so nothing is advertised that has no handler. A handler runs on the
// connection's strand (or, marked may_block, on the blocking pool while its connection waits),
// decodes its body (a DecodeError closes the connection), and completes ctx.responder exactly
// once — immediately or later from another thread (Fetch long-polls). A handler that finds only
// after decoding that its answer needs blocking work (Metadata auto-creating a topic) sets
// ctx.run_again_blocking and returns without answering: it runs again, from the start, on the
// blocking pool.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "broker/net/connection.h"
#include "broker/net/frame.h"
#include "protocol/messages/headers.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace strata::broker {

struct Services;
namespace quota {
struct QuotaClient;
}

struct RequestContext {
  Services& svc;
  std::shared_ptr<RequestFrame> frame;
  protocol::RequestHeader header;
  int16_t api_key;
  int16_t version;
  Responder responder;
  // Kafka's quota user (the principal's name), taken at dispatch: a long-poll answers off the
  // strand, where the Session must not be read.
  std::string quota_user;
  // Where the handler runs may block (the blocking pool, or a dispatcher without one).
  bool may_block = false;
  // Set by a handler where !may_block, returning without an answer: run me on the blocking pool.
  bool run_again_blocking = false;

  // Who sent it (Session: read it where the handler runs, before going asynchronous).
  const std::string& principal() const { return responder.session().principal; }
  const std::string& client_host() const { return responder.session().host; }

  // Encodes `resp` with the right response header version and sends it. Client quotas: the
  // throttle is the larger of what the handler put in resp.throttle_time_ms (byte-rate quotas) and
  // the client's request_percentage throttle; it is written into the response (when its schema
  // has the field) and mutes the connection for that long once the response is written.
  template <typename Resp>
  void respond(Resp& resp) const;
};

// The request_percentage throttle this request's client has earned (0 = none; dispatch.cc).
int64_t request_quota_throttle(const RequestContext& ctx);
// Whom the request's client quotas count against (its user and client id; dispatch.cc). Views
// into ctx.
quota::QuotaClient quota_client(const RequestContext& ctx);

using HandlerFn = void (*)(RequestContext& ctx, protocol::Reader& body);

// counts a non-zero top-level error code of a response.
void note_response_error(Services& svc, int16_t api_key, protocol::ErrorCode error_code);

struct HandlerDef {
  int16_t api_key;
  int16_t min_version;
  int16_t max_version;
  HandlerFn fn;
  // The handler may block its thread for milliseconds to seconds (a synchronous etcd call and
  // the wait for the cluster view in cluster mode, a small file written and fsynced, a topic's
  // files created): it runs on the dispatcher's blocking pool, not on the connection's thread.
  bool may_block = false;
};

// Frames `resp` (size prefix + response header + body). A response that cannot be encoded (a
// string over 32,767 bytes where the version has an int16 length: a member id built from a
// client id of 32,731 bytes or more, in the JoinGroup answer of that member or of its group's
// leader, or in DescribeGroups v0-4) is marked unencodable: Responder::send closes the connection
// instead of sending a string whose length wrapped (a Java broker fails to serialize it too).
template <typename Resp>
ResponseFrame encode_response(int16_t api_key, int16_t version, int32_t correlation_id,
                              const Resp& resp) {
  protocol::Writer w(resp.size(version) + 16);
  w.write_int32(0);  // size, patched below
  protocol::ResponseHeader h;
  h.correlation_id = correlation_id;
  h.encode(w, protocol::response_header_version(api_key, version));
  resp.encode(w, version);
  if (w.overflowed()) {
    ResponseFrame unencodable;
    unencodable.unencodable = "the response to api key " + std::to_string(api_key) + " v" +
                              std::to_string(version) + " (correlation id " +
                              std::to_string(correlation_id) +
                              ") has a string over 32767 bytes, which that version cannot encode";
    return unencodable;
  }
  w.patch_int32(0, static_cast<int32_t>(w.total_size() - 4));
  ResponseFrame f;
  f.external = w.external();
  f.bytes = std::move(w.buffer());
  return f;
}

template <typename Resp>
void RequestContext::respond(Resp& resp) const {
  // top-level error codes by api (per-partition codes are counted by the handlers).
  if constexpr (requires { resp.error_code; }) {
    if (resp.error_code != protocol::ErrorCode::none) {
      note_response_error(svc, api_key, resp.error_code);
    }
  }
  int64_t throttle = request_quota_throttle(*this);
  if constexpr (requires { resp.throttle_time_ms; }) {
    throttle = std::min<int64_t>(std::max<int64_t>(throttle, resp.throttle_time_ms), INT32_MAX);
    resp.throttle_time_ms = static_cast<int32_t>(throttle);
  }
  ResponseFrame f = encode_response(api_key, version, frame->correlation_id, resp);
  f.throttle_ms = throttle;
  responder.send(std::move(f));
}

}  // namespace strata::broker
