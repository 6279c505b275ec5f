// SaslHandshake (17) v0-1, SaslAuthenticate (36) v0-2, and the bare SASL tokens that follow a v0
// handshake (kafka-python's path). The state lives in the connection's Session (handlers run on
// its strand): handshake -> authenticate (v1) or raw_token (v0) -> authenticated. A failed
// authentication is answered after connection.failed.authentication.delay.ms (SaslAuthenticate:
// SASL_AUTHENTICATION_FAILED; a bare token: nothing) and the connection closes, as Kafka does.
// Re-authentication (KIP-368): an authenticated session may run SaslHandshake v1 +
// SaslAuthenticate again, with the same mechanism and principal; with connections.max.reauth.ms
// set, a session past its lifetime is closed at its next request (broker/dispatch.cc).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/sasl_authenticator.h"
#include "broker/services.h"
#include "protocol/messages/sasl_authenticate.h"
#include "protocol/messages/sasl_handshake.h"

namespace strata::broker::handlers {

namespace p = strata::protocol;
using p::ErrorCode;

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Sends `frame` (closing after it) once the failed-authentication delay has passed.
void answer_failure_later(Services& svc, const Responder& responder, ResponseFrame frame) {
  frame.close_after = true;
  const int64_t delay = svc.config.connection_failed_authentication_delay_ms;
  if (delay <= 0) {
    responder.send(std::move(frame));
    return;
  }
  auto timer = std::make_shared<boost::asio::steady_timer>(responder.executor(),
                                                           std::chrono::milliseconds(delay));
  timer->async_wait([timer, responder, frame = std::move(frame)](
                        boost::system::error_code) mutable { responder.send(std::move(frame)); });
}

// What a completed exchange does to the session; false when a re-authentication changed the
// principal (Kafka refuses that).
bool complete(Services& svc, Session& s, const std::string& user, int64_t& lifetime_ms) {
  const std::string principal = "User:" + user;
  const bool reauth = s.sasl_reauthenticating;
  if (reauth && principal != s.principal) return false;
  s.principal = principal;
  s.sasl = Session::Sasl::authenticated;
  s.sasl_reauthenticating = false;
  s.exchange.reset();
  lifetime_ms = svc.sasl ? svc.sasl->max_reauth_ms(s.listener) : 0;
  s.session_expires_ms = lifetime_ms > 0 ? steady_ms() + lifetime_ms : 0;
  if (!reauth) spdlog::debug("authenticated {} with {}", principal, s.mechanism);
  return true;
}

void note_failure(Services& svc, const Responder& responder, const Session& s) {
  svc.metrics.authentication_failed();
  spdlog::info("authentication failed for {} on listener {} with {}", responder.peer(), s.listener,
               s.mechanism);
}

}  // namespace

void sasl_handshake(RequestContext& ctx, p::Reader& body) {
  p::SaslHandshakeRequest req;
  req.decode(body, ctx.version);
  Session& s = ctx.responder.session();
  p::SaslHandshakeResponse resp;
  auto* sasl = ctx.svc.sasl;
  if (sasl) resp.mechanisms = sasl->mechanisms(s.listener);
  const bool first = s.sasl == Session::Sasl::handshake;
  // KIP-368: re-authentication needs SaslAuthenticate, i.e. a v1 handshake, and the same mechanism.
  const bool reauth = s.sasl == Session::Sasl::authenticated && ctx.version >= 1 &&
                      uses_sasl(s.protocol) && req.mechanism == s.mechanism;
  if (!sasl || !uses_sasl(s.protocol) || (!first && !reauth)) {
    resp.error_code = ErrorCode::illegal_sasl_state;
    ctx.respond(resp);
    return;
  }
  auto exchange =
      sasl->enabled(s.listener, req.mechanism) ? sasl->start(s.listener, req.mechanism) : nullptr;
  if (!exchange) {
    resp.error_code = ErrorCode::unsupported_sasl_mechanism;
    ResponseFrame f = encode_response(ctx.api_key, ctx.version, ctx.frame->correlation_id, resp);
    f.close_after = true;
    note_response_error(ctx.svc, ctx.api_key, resp.error_code);
    ctx.responder.send(std::move(f));
    return;
  }
  s.mechanism = req.mechanism;
  s.exchange = std::move(exchange);
  s.sasl_reauthenticating = reauth;
  s.sasl = ctx.version == 0 ? Session::Sasl::raw_token : Session::Sasl::authenticate;
  ctx.respond(resp);
}

void sasl_authenticate(RequestContext& ctx, p::Reader& body) {
  p::SaslAuthenticateRequest req;
  req.decode(body, ctx.version);
  Session& s = ctx.responder.session();
  p::SaslAuthenticateResponse resp;
  if (s.sasl != Session::Sasl::authenticate || !s.exchange || !ctx.svc.sasl) {
    resp.error_code = ErrorCode::illegal_sasl_state;
    resp.error_message = "SaslAuthenticate without a SaslHandshake v1 first";
    ResponseFrame f = encode_response(ctx.api_key, ctx.version, ctx.frame->correlation_id, resp);
    f.close_after = true;
    ctx.responder.send(std::move(f));
    return;
  }
  const std::string_view token(reinterpret_cast<const char*>(req.auth_bytes.data()),
                               req.auth_bytes.size());
  security::SaslStep step = ctx.svc.sasl->step(*s.exchange, token);
  int64_t lifetime = 0;
  if (step.failed || (step.complete && !complete(ctx.svc, s, step.user, lifetime))) {
    note_failure(ctx.svc, ctx.responder, s);
    s.exchange.reset();
    s.sasl = Session::Sasl::handshake;  // nothing but a new handshake is served meanwhile
    s.sasl_reauthenticating = false;
    resp.error_code = ErrorCode::sasl_authentication_failed;
    resp.error_message =
        "Authentication failed during authentication due to invalid credentials "
        "with SASL mechanism " +
        s.mechanism;
    note_response_error(ctx.svc, ctx.api_key, resp.error_code);
    answer_failure_later(
        ctx.svc, ctx.responder,
        encode_response(ctx.api_key, ctx.version, ctx.frame->correlation_id, resp));
    return;
  }
  resp.auth_bytes = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(step.response.data()),
                                             step.response.size());
  resp.session_lifetime_ms = lifetime;
  ctx.respond(resp);
}

void sasl_raw_token(Services& svc, const RequestFrame& frame, const Responder& responder) {
  Session& s = responder.session();
  const std::string_view token(reinterpret_cast<const char*>(frame.bytes.data()),
                               frame.bytes.size());
  security::SaslStep step;
  step.failed = true;
  if (s.exchange && svc.sasl) step = svc.sasl->step(*s.exchange, token);
  int64_t lifetime = 0;
  if (step.failed || (step.complete && !complete(svc, s, step.user, lifetime))) {
    note_failure(svc, responder, s);
    s.exchange.reset();
    s.sasl = Session::Sasl::handshake;
    // v0 has no error frame: the client sees the connection close.
    const int64_t delay = svc.config.connection_failed_authentication_delay_ms;
    auto timer = std::make_shared<boost::asio::steady_timer>(responder.executor(),
                                                             std::chrono::milliseconds(delay));
    timer->async_wait([timer, responder](boost::system::error_code) {
      responder.close("authentication failed");
    });
    return;
  }
  // The server's token, size-prefixed and nothing else (PLAIN's success is an empty one).
  ResponseFrame f;
  const auto n = static_cast<uint32_t>(step.response.size());
  // Sized once and filled (GCC 12 misreads a 4-byte vector grown by insert as out of bounds).
  f.bytes.resize(4 + step.response.size());
  for (int i = 0; i < 4; ++i) f.bytes[i] = static_cast<uint8_t>(n >> (24 - 8 * i));
  std::copy(step.response.begin(), step.response.end(), f.bytes.begin() + 4);
  responder.send(std::move(f));
}

}  // namespace strata::broker::handlers
