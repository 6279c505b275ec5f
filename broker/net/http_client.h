// A blocking HTTP/1.1 call (Boost.Beast) for broker-to-broker side requests — a Schema Registry
// request forwarded to the registry's writer. One connection per call, closed after the answer:
// these are rare (schema writes, and reads of brokers that do not hold the registry's state) and
// a pooled connection to a broker that failed over would only need extra handling.
// Plain or HTTPS (HttpCallOptions::tls). Bounded: connect and request timeouts, the answer's body
// size.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "broker/net/http_server.h"
#include "protocol/base/result.h"

namespace strata::broker {

struct HttpCallOptions {
  int64_t connect_timeout_ms = 2000;
  int64_t request_timeout_ms = 15000;  // write the request and read the whole answer
  uint64_t max_body_bytes = 16u << 20;
  // Set = HTTPS with this client context (its trust, and a certificate for mTLS); the peer's
  // certificate must also name `host` (an IP address as an IP SAN).
  std::shared_ptr<boost::asio::ssl::context> tls;
};

// Sends `req` (method, path, query, headers — Authorization included —, body; user and peer are
// not sent) to host:port and
// returns the answer (status, content type, body, other headers). Errc::io_error when the broker
// cannot be reached (nothing was sent) and Errc::unavailable when no whole answer came back
// (the request may or may not have been served).
Result<HttpResponse> http_call(const std::string& host, uint16_t port, const HttpRequest& req,
                               const HttpCallOptions& options = {});

}  // namespace strata::broker
