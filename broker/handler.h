// The request-handler contract. Each Kafka API is one HandlerDef (key, supported version range,
// function) defined in broker/handlers/<api>.cc; the table in dispatch.cc is the only input to the
// ApiVersions answer, so nothing is advertised that has no handler. A handler runs on the
// connection's strand, decodes its body (a DecodeError closes the connection), and completes
// ctx.responder exactly once — immediately or later from another thread (Fetch long-polls).
#pragma once

#include <cstdint>
#include <memory>

#include "broker/net/connection.h"
#include "broker/net/frame.h"
#include "protocol/messages/headers.h"
#include "protocol/wire/errors.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace strata::broker {

struct Services;

struct RequestContext {
  Services& svc;
  std::shared_ptr<RequestFrame> frame;
  protocol::RequestHeader header;
  int16_t api_key;
  int16_t version;
  Responder responder;

  // Encodes `resp` with the right response header version and sends it.
  template <typename Resp>
  void respond(const Resp& resp) const;
};

using HandlerFn = void (*)(RequestContext& ctx, protocol::Reader& body);

// counts a non-zero top-level error code of a response.
void note_response_error(Services& svc, int16_t api_key, protocol::ErrorCode error_code);

struct HandlerDef {
  int16_t api_key;
  int16_t min_version;
  int16_t max_version;
  HandlerFn fn;
};

// Frames `resp` (size prefix + response header + body).
template <typename Resp>
ResponseFrame encode_response(int16_t api_key, int16_t version, int32_t correlation_id,
                              const Resp& resp) {
  protocol::Writer w(resp.size(version) + 16);
  w.write_int32(0);  // size, patched below
  protocol::ResponseHeader h;
  h.correlation_id = correlation_id;
  h.encode(w, protocol::response_header_version(api_key, version));
  resp.encode(w, version);
  w.patch_int32(0, static_cast<int32_t>(w.total_size() - 4));
  ResponseFrame f;
  f.external = w.external();
  f.bytes = std::move(w.buffer());
  return f;
}

template <typename Resp>
void RequestContext::respond(const Resp& resp) const {
  // top-level error codes by api (per-partition codes are counted by the handlers).
  if constexpr (requires { resp.error_code; }) {
    if (resp.error_code != protocol::ErrorCode::none) {
      note_response_error(svc, api_key, resp.error_code);
    }
  }
  responder.send(encode_response(api_key, version, frame->correlation_id, resp));
}

}  // namespace strata::broker
