// Small helpers shared by the group handlers (broker/handlers/{join_group,...}.cc): copying wire
// bytes into owned buffers, Kafka's "/host" client_host form, the client id of a request.
// Header-only; any thread.
#pragma once

#include <span>
#include <string>

#include "broker/group/group.h"
#include "broker/handler.h"

namespace strata::broker::group {

inline Bytes to_bytes(std::span<const uint8_t> s) { return Bytes(s.begin(), s.end()); }

inline std::span<const uint8_t> as_span(const Bytes& b) { return {b.data(), b.size()}; }

// "/127.0.0.1" from the connection's "127.0.0.1:port" (Kafka prints InetAddress.toString()).
inline std::string client_host(const RequestContext& ctx) {
  const std::string& peer = ctx.responder.peer();
  auto colon = peer.rfind(':');
  return "/" + (colon == std::string::npos ? peer : peer.substr(0, colon));
}

inline std::string client_id(const RequestContext& ctx) {
  return ctx.header.client_id.value_or("");
}

}  // namespace strata::broker::group
