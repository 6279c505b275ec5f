// HttpServer: a small HTTP/1.1 server (Boost.Beast) for the broker's side endpoints — Prometheus
// /metrics and the embedded Schema Registry — plain or TLS on an asio ssl::context built by
// security/tls_context.h, so they use the same OpenSSL and key handling as the Kafka listeners.
//
// Why not prometheus-cpp's Exposer (CivetWeb), which served /metrics before: Debian 12's civetweb
// 1.15 loads OpenSSL with dlopen and, against OpenSSL 3, its worker thread calls a null function
// pointer (SIGSEGV) on the first request after a completed TLS handshake (checked with
// Exposer({"listening_ports", "127.0.0.1:0s", "ssl_certificate", ...})): TLS there would crash the
// broker, and it would be a second PEM loader beside ours. Basic auth (RegisterAuth) would have
// worked, but only over plain text.
//
// It runs its own threads (one io_context each), apart from the Kafka listeners: a slow scrape
// never delays a Produce, and HTTP clients cannot use up the Kafka connection limits. Bounds:
// header and body bytes of a request, open connections (beyond it a new one is closed at once), the
// time a TLS handshake, a first request or a response write may take, and the idle time between
// keep-alive requests. With basic auth (RFC 7617: one configured pair, compared in constant time,
// or an `authenticate` callback) every request must carry valid credentials before any handler
// runs; else 401 with WWW-Authenticate.
// Routes (exact paths, then the longest matching prefix) are registered before start(); handlers
// run synchronously on their connection's thread (or, for requests `may_block` names, on a pool)
// and must be thread-safe. stop() (or the destructor) closes everything and joins the threads,
// after any handler in progress returns.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/result.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace strata::broker {

struct HttpRequest {
  std::string method;                                        // as sent: "GET", "HEAD", "POST", ...
  std::string path;                                          // the target before '?'
  std::string query;                                         // after '?', not decoded
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  std::string user;  // the basic-auth user ("" without auth)
  std::string peer;  // the client's address
  // The first header of that name (given in lower case); "" when absent.
  std::string header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // added as they are
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpServerOptions {
  std::string name = "http";                       // in log lines ("metrics endpoint")
  std::shared_ptr<boost::asio::ssl::context> tls;  // null = plain HTTP
  std::string basic_auth_user;                     // both empty = no authentication
  std::string basic_auth_password;
  // Basic auth against a set of users instead of the one pair (the Schema Registry checks the
  // broker's SCRAM users): (user, password) → valid. May be slow; runs on the server's threads,
  // or with `authenticate_at_hand` on the pool (below).
  std::function<bool(const std::string& user, const std::string& password)> authenticate;
  // The answer `authenticate` would give when it is at hand (a login remembered as good), else
  // nullopt; runs on the connection's thread and must be quick. A login it cannot answer is
  // checked on a thread of its own (then served as any other), so a slow check (a key
  // derivation, perhaps queued behind a flood of wrong passwords) holds neither another
  // connection nor the pool below; at most `max_queued_logins` wait for it, one beyond is
  // answered 401 at once.
  std::function<std::optional<bool>(const std::string& user, const std::string& password)>
      authenticate_at_hand;
  int max_queued_logins = 16;
  // A 401's content type and body (the registry answers with its JSON error).
  std::string unauthorized_content_type = "text/plain; charset=utf-8";
  std::string unauthorized_body = "unauthorized\n";
  std::string realm = "strata";
  int threads = 2;  // each with its own io_context; connections are spread over them
  int max_connections = 64;
  uint32_t max_header_bytes = 8192;     // beyond: 431, then close
  uint64_t max_body_bytes = 64 * 1024;  // beyond: 413, then close
  int64_t request_timeout_ms = 10000;   // TLS handshake, first request, each response write
  int64_t idle_timeout_ms = 60000;      // for the next request on a kept-alive connection
  // Requests for which this answers true may wait a long time (a registry write for its journal,
  // a cluster's request for the writer): they run on a pool of `blocking_threads`, so that they
  // hold no other connection of their thread; the rest run on their connection's thread. Null =
  // every request there.
  std::function<bool(const HttpRequest&)> may_block;
  int blocking_threads = 4;
};

// Refusals, since start (any thread may read them).
struct HttpServerStats {
  std::atomic<uint64_t> unauthorized{0};            // 401: missing or wrong credentials
  std::atomic<uint64_t> tls_handshake_failures{0};  // incl. plain HTTP sent to a TLS port
  std::atomic<uint64_t> bad_requests{0};            // unparsable, too large, timed out mid-request
  std::atomic<uint64_t> refused_connections{0};     // over max_connections
};

struct HttpServerImpl;

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  void route(std::string path, HttpHandler handler);
  void route_prefix(std::string prefix, HttpHandler handler);

  // Binds host:port (host "" = every interface, port 0 = a free port) and starts serving.
  // Errc::io_error when the address cannot be bound.
  Status start(const std::string& host, uint16_t port);
  void stop();

  uint16_t port() const { return port_; }
  bool tls() const;
  const HttpServerStats& stats() const;

  // "Basic <base64 user:password>" → (user, password); nullopt when it is not that.
  static std::optional<std::pair<std::string, std::string>> basic_credentials(
      std::string_view authorization);
  // "Basic <base64 user:password>" against the configured pair, in constant time.
  static bool basic_auth_matches(std::string_view authorization, const std::string& user,
                                 const std::string& password);

 private:
  std::unique_ptr<HttpServerImpl>
      impl_;  // options, routes, threads; keeps Beast out of this header
  uint16_t port_ = 0;
};

}  // namespace strata::broker
