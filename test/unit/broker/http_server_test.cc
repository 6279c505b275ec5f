// The broker's HTTP(S) server (broker/net/http_server.h): routes, HEAD, keep-alive, basic auth
// (401 with WWW-Authenticate, constant-time match), request bounds (431 / 413), the connection
// limit, timeouts, a failing handler, stop() with connections open (also racing sessions that end
// meanwhile), a blocking handler holding only its own thread's connections (or running on the
// pool), HTTPS with a certificate made here and given as PEM text through the metrics.ssl.* keys
// (make_prefixed_tls_context), and that context's errors naming the metrics.ssl.* key; the blocking
// client (http_client.h) against it.
#include "broker/net/http_server.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "broker/config/config.h"
#include "broker/net/asio_ssl.h"
#include "broker/net/http_client.h"
#include "broker/security/tls_context.h"
#include "protocol/base/base64.h"

namespace strata::broker {
namespace {

// A blocking client socket with a receive timeout, so a broken server fails the test, not hangs.
class Client {
 public:
  explicit Client(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      throw std::runtime_error("connect failed");
    }
  }
  ~Client() { ::close(fd_); }
  void send(const std::string& s) {
    ASSERT_EQ(::send(fd_, s.data(), s.size(), 0), ssize_t(s.size()));
  }
  // One response (head + Content-Length body); "" when the server closed first.
  std::string response(bool head_request = false) {
    for (;;) {
      const size_t end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        size_t len = 0;
        const size_t cl = buf_.find("Content-Length: ");
        if (cl != std::string::npos && cl < end) len = std::stoul(buf_.substr(cl + 16));
        if (head_request) len = 0;
        if (buf_.size() >= end + 4 + len) {
          std::string r = buf_.substr(0, end + 4 + len);
          buf_.erase(0, end + 4 + len);
          return r;
        }
      }
      if (!fill()) return "";
    }
  }
  // True when the server closed the connection (EOF or reset) within the receive timeout.
  bool closed_by_server() {
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, 0);
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  bool fill() {
    char b[4096];
    const ssize_t n = ::recv(fd_, b, sizeof(b), 0);
    if (n <= 0) return false;
    buf_.append(b, size_t(n));
    return true;
  }
  int fd_ = -1;
  std::string buf_;
};

std::string get(const std::string& path, const std::string& extra = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n";
}

int status_of(const std::string& r) { return r.size() > 12 ? std::stoi(r.substr(9, 3)) : 0; }

std::string body_of(const std::string& r) { return r.substr(r.find("\r\n\r\n") + 4); }

std::unique_ptr<HttpServer> serve(HttpServerOptions o) {
  auto s = std::make_unique<HttpServer>(std::move(o));
  s->route("/metrics", [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", "metrics " + r.method + " q=" + r.query, {}};
  });
  s->route_prefix("/subjects/", [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", "subject " + r.path + " " + r.header("x-a"), {}};
  });
  s->route_prefix("/subjects/deep/", [](const HttpRequest&) {
    return HttpResponse{201, "text/plain", "deeper", {{"X-Route", "deep"}}};
  });
  s->route("/boom", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("x"); });
  EXPECT_TRUE(s->start("127.0.0.1", 0).ok());
  return s;
}

TEST(HttpServer, RoutesHeadAndKeepAlive) {
  auto s = serve({});
  Client c(s->port());
  c.send(get("/metrics?a=1"));
  std::string r = c.response();
  EXPECT_EQ(status_of(r), 200);
  EXPECT_EQ(body_of(r), "metrics GET q=a=1");
  // The same connection serves the next requests (keep-alive), in order.
  c.send(get("/subjects/x/versions", "X-A: hello\r\n") + get("/subjects/deep/1") + get("/nope"));
  r = c.response();
  EXPECT_EQ(body_of(r), "subject /subjects/x/versions hello");
  r = c.response();
  EXPECT_EQ(status_of(r), 201);  // the longest prefix wins
  EXPECT_NE(r.find("X-Route: deep"), std::string::npos);
  EXPECT_EQ(status_of(c.response()), 404);
  c.send("HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  r = c.response(/*head_request=*/true);
  EXPECT_EQ(status_of(r), 200);
  EXPECT_NE(r.find("Content-Length: 15"), std::string::npos) << r;  // "metrics HEAD q="
  EXPECT_EQ(body_of(r), "");
  c.send(get("/boom"));
  EXPECT_EQ(status_of(c.response()), 500);
  c.send(get("/metrics", "Connection: close\r\n"));
  EXPECT_EQ(status_of(c.response()), 200);
  EXPECT_TRUE(c.closed_by_server());
}

// The blocking client other brokers forward with (http_client.h), against this server.
TEST(HttpClient, CallsRelayStatusHeadersAndBodyAndNameUnreachableBrokers) {
  auto s = serve({});
  HttpRequest req;
  req.method = "GET";
  req.path = "/subjects/x/versions";
  req.query = "deleted=true";
  req.headers = {{"x-a", "relayed"}, {"host", "ignored"}};
  auto r = http_call("127.0.0.1", s->port(), req);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "subject /subjects/x/versions relayed");
  EXPECT_EQ(r->content_type, "text/plain");
  req.path = "/subjects/deep/1";
  r = http_call("127.0.0.1", s->port(), req);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 201);
  bool routed = false;
  for (const auto& [name, value] : r->headers) routed |= name == "X-Route" && value == "deep";
  EXPECT_TRUE(routed);
  req.method = "HEAD";  // a Content-Length and no body: answered, not waited for
  req.path = "/metrics";
  r = http_call("127.0.0.1", s->port(), req, HttpCallOptions{500, 2000, 1 << 20, nullptr});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "");
  const uint16_t port = s->port();
  s->stop();
  r = http_call("127.0.0.1", port, req, HttpCallOptions{500, 1000, 1 << 20, nullptr});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Errc::io_error) << r.status().message();
}

TEST(HttpServer, BasicAuth) {
  HttpServerOptions o;
  o.basic_auth_user = "prom";
  o.basic_auth_password = "s3cret:x";
  o.realm = "test realm";
  auto s = serve(o);
  Client c(s->port());
  c.send(get("/metrics"));
  std::string r = c.response();
  EXPECT_EQ(status_of(r), 401);
  EXPECT_NE(r.find("WWW-Authenticate: Basic realm=\"test realm\""), std::string::npos) << r;
  for (const char* wrong : {"prom:s3cret", "prom:s3cret:y", "Prom:s3cret:x", ":", "prom"}) {
    c.send(get("/metrics", "Authorization: Basic " + base64_encode(wrong) + "\r\n"));
    EXPECT_EQ(status_of(c.response()), 401) << wrong;  // and the connection stays usable
  }
  c.send(get("/metrics", "Authorization: Bearer abc\r\n"));
  EXPECT_EQ(status_of(c.response()), 401);
  c.send(get("/nope", "Authorization: Basic " + base64_encode("prom:s3cret:x") + "\r\n"));
  EXPECT_EQ(status_of(c.response()), 404);  // authenticated first, routed second
  c.send(get("/metrics", "Authorization: basic  " + base64_encode("prom:s3cret:x") + "\r\n"));
  EXPECT_EQ(status_of(c.response()), 200);
  EXPECT_EQ(s->stats().unauthorized.load(), 7u);

  EXPECT_TRUE(HttpServer::basic_auth_matches("Basic " + base64_encode("a:b"), "a", "b"));
  EXPECT_FALSE(HttpServer::basic_auth_matches("Basic " + base64_encode("a:b") + "!", "a", "b"));
  EXPECT_FALSE(HttpServer::basic_auth_matches("", "a", "b"));
  EXPECT_FALSE(HttpServer::basic_auth_matches("Basic", "a", "b"));
}

TEST(HttpServer, OversizedRequestsAreRefusedThenClosed) {
  HttpServerOptions o;
  o.max_header_bytes = 1024;
  o.max_body_bytes = 100;
  auto s = serve(o);
  {
    Client c(s->port());
    c.send(get("/metrics", "X-Big: " + std::string(2000, 'a') + "\r\n"));
    EXPECT_EQ(status_of(c.response()), 431);
    EXPECT_TRUE(c.closed_by_server());
  }
  {
    Client c(s->port());
    c.send("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" +
           std::string(101, 'b'));
    EXPECT_EQ(status_of(c.response()), 413);
    EXPECT_TRUE(c.closed_by_server());
  }
  {
    Client c(s->port());
    c.send("NOT HTTP AT ALL\r\n\r\n");
    EXPECT_EQ(status_of(c.response()), 400);
    EXPECT_TRUE(c.closed_by_server());
  }
  Client ok(s->port());
  ok.send(get("/metrics"));
  EXPECT_EQ(status_of(ok.response()), 200);
  EXPECT_EQ(s->stats().bad_requests.load(), 3u);
}

TEST(HttpServer, ConnectionLimitAndTimeouts) {
  HttpServerOptions o;
  o.max_connections = 2;
  o.request_timeout_ms = 1000;
  o.idle_timeout_ms = 1500;
  auto s = serve(o);
  auto a = std::make_unique<Client>(s->port());
  Client b(s->port());
  b.send(get("/metrics"));
  EXPECT_EQ(status_of(b.response()), 200);  // both admitted
  Client third(s->port());
  EXPECT_TRUE(third.closed_by_server());  // over the limit: closed at once
  EXPECT_EQ(s->stats().refused_connections.load(), 1u);
  // A connection that sends nothing is closed after the request timeout, freeing its slot.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(a->closed_by_server());
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(waited, std::chrono::seconds(3));
  a.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  Client d(s->port());
  d.send(get("/metrics"));
  EXPECT_EQ(status_of(d.response()), 200);
  // After a served request a kept-alive connection may idle for idle_timeout_ms, then closes.
  EXPECT_TRUE(d.closed_by_server());
}

TEST(HttpServer, StopClosesOpenConnections) {
  auto s = serve({});
  Client idle(s->port());
  Client served(s->port());
  served.send(get("/metrics"));
  EXPECT_EQ(status_of(served.response()), 200);
  const auto t0 = std::chrono::steady_clock::now();
  s->stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE(idle.closed_by_server());
  EXPECT_TRUE(served.closed_by_server());
}

// A handler blocked on /block while the other connection is served three times: with one
// io_context per thread the first two connections land on different threads; with `may_block`
// the blocked request runs on the pool and even a single thread serves the other connection.
// Whatever fails in a test holding a handler or check, the server's stop() must not wait forever:
// releases it, then stops the server.
struct Releases {
  std::function<void()> f;
  HttpServer* server;
  ~Releases() {
    f();
    server->stop();
  }
};

void blocked_handler_holds_no_other_connection(HttpServerOptions o) {
  std::mutex mu;  // declared before the server: its stop() may wait for the held handler
  std::condition_variable cv;
  bool blocked = false, released = false;
  auto release = [&] {
    {
      std::lock_guard lock(mu);
      released = true;
    }
    cv.notify_all();
  };
  auto s = std::make_unique<HttpServer>(o);
  s->route("/block", [&](const HttpRequest&) {
    std::unique_lock lock(mu);
    blocked = true;
    cv.notify_all();
    cv.wait(lock, [&] { return released; });
    return HttpResponse{200, "text/plain", "released", {}};
  });
  s->route("/fast", [](const HttpRequest&) { return HttpResponse{200, "text/plain", "fast", {}}; });
  ASSERT_TRUE(s->start("127.0.0.1", 0).ok());
  Releases releases{release, s.get()};
  Client a(s->port());
  Client b(s->port());
  a.send(get("/block"));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return blocked; }));
  }
  for (int i = 0; i < 3; ++i) {
    b.send(get("/fast"));
    const std::string r = b.response();
    ASSERT_EQ(status_of(r), 200) << r;
    EXPECT_EQ(body_of(r), "fast");
  }
  release();
  const std::string r = a.response();
  ASSERT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(body_of(r), "released");
  // The connection whose request ran on the pool goes on serving.
  a.send(get("/fast"));
  EXPECT_EQ(body_of(a.response()), "fast");
}

TEST(HttpServer, ABlockingHandlerHoldsOnlyItsOwnThread) {
  HttpServerOptions o;
  o.threads = 2;
  blocked_handler_holds_no_other_connection(o);
}

TEST(HttpServer, RequestsThatMayBlockRunOnThePool) {
  HttpServerOptions o;
  o.threads = 1;
  o.may_block = [](const HttpRequest& r) { return r.path == "/block"; };
  o.blocking_threads = 1;
  blocked_handler_holds_no_other_connection(o);
}

// A login whose check is not at hand (a key derivation) is checked on a thread of its own: a
// slow check holds neither another connection of its thread nor the pool, while remembered
// logins and requests without credentials are answered at once; its queue is bounded.
TEST(HttpServer, ALoginNotAtHandIsCheckedOnItsOwnThread) {
  std::mutex mu;  // declared before the server: its stop() may wait for the held check
  std::condition_variable cv;
  bool checking = false, released = false;
  auto release = [&] {
    {
      std::lock_guard lock(mu);
      released = true;
    }
    cv.notify_all();
  };
  HttpServerOptions o;
  o.threads = 1;
  o.blocking_threads = 1;
  o.may_block = [](const HttpRequest& r) { return r.path == "/pooled"; };
  o.max_queued_logins = 1;
  o.authenticate = [&](const std::string& user, const std::string& password) {
    if (user == "slow") {
      std::unique_lock lock(mu);
      checking = true;
      cv.notify_all();
      cv.wait(lock, [&] { return released; });
    }
    return password == "right";
  };
  o.authenticate_at_hand = [](const std::string& user,
                              const std::string& password) -> std::optional<bool> {
    if (user == "known") return password == "right";
    return std::nullopt;
  };
  auto s = std::make_unique<HttpServer>(o);
  for (const char* path : {"/who", "/pooled"}) {
    s->route(path, [](const HttpRequest& r) {
      return HttpResponse{200, "text/plain", "hello " + r.user, {}};
    });
  }
  ASSERT_TRUE(s->start("127.0.0.1", 0).ok());
  Releases releases{release, s.get()};
  auto auth = [](const char* up) { return "Authorization: Basic " + base64_encode(up) + "\r\n"; };
  Client a(s->port());
  Client b(s->port());
  a.send(get("/who", auth("slow:right")));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return checking; }));
  }
  // The only connection thread is free while the slow check waits on the pool.
  b.send(get("/who", auth("known:right")));
  std::string r = b.response();
  ASSERT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(body_of(r), "hello known");
  b.send(get("/who", auth("known:wrong")));
  EXPECT_EQ(status_of(b.response()), 401);
  b.send(get("/who"));
  EXPECT_EQ(status_of(b.response()), 401);
  // Nor the pool: the check waits on a thread of its own.
  b.send(get("/pooled", auth("known:right")));
  r = b.response();
  ASSERT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(body_of(r), "hello known");
  // One login may wait for its check; another is refused at once, without one.
  Client c(s->port());
  c.send(get("/who", auth("third:right")));
  EXPECT_EQ(status_of(c.response()), 401);
  release();
  r = a.response();
  ASSERT_EQ(status_of(r), 200) << r;
  EXPECT_EQ(body_of(r), "hello slow");
  // Checked on the pool and refused; the connection goes on serving.
  a.send(get("/who", auth("other:wrong")));
  EXPECT_EQ(status_of(a.response()), 401);
  a.send(get("/nope", auth("other:right")));
  EXPECT_EQ(status_of(a.response()), 404);      // authenticated first, routed second
  a.send(get("/pooled", auth("other:right")));  // checked, then served on the pool
  EXPECT_EQ(body_of(a.response()), "hello other");
  EXPECT_EQ(s->stats().unauthorized.load(), 4u);
}

// stop() racing sessions that end as it closes them (the last reference to a session may be the
// one stop() holds), with plain connections and TLS handshakes left half done.
void stop_with_open_connections(const HttpServerOptions& o, const std::string& first_bytes) {
  for (int round = 0; round < 20; ++round) {
    auto s = serve(o);
    std::vector<std::unique_ptr<Client>> clients;
    for (int i = 0; i < 8; ++i) {
      clients.push_back(std::make_unique<Client>(s->port()));
      if (i % 2) clients.back()->send(first_bytes);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(round % 4));
    const auto t0 = std::chrono::steady_clock::now();
    s->stop();
    ASSERT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << round;
  }
}

TEST(HttpServer, StopRacingEndingSessions) { stop_with_open_connections({}, "GET /metr"); }

// A self-signed P-256 certificate for 127.0.0.1: {key PEM, certificate PEM}.
std::pair<std::string, std::string> self_signed() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* x = X509_new();
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
  X509_add_ext(x, san, -1);
  X509_EXTENSION_free(san);
  X509_sign(x, key, EVP_sha256());
  auto pem = [](auto write) {
    BIO* b = BIO_new(BIO_s_mem());
    write(b);
    char* p = nullptr;
    const long n = BIO_get_mem_data(b, &p);
    std::string s(p, size_t(n));
    BIO_free(b);
    return s;
  };
  std::string k =
      pem([&](BIO* b) { PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr, nullptr); });
  std::string c = pem([&](BIO* b) { PEM_write_bio_X509(b, x); });
  X509_free(x);
  EVP_PKEY_free(key);
  return {k, c};
}

TEST(HttpServer, HttpsWithTheMetricsKeys) {
  auto [key, cert] = self_signed();
  auto cfg = parse_config("", {"metrics.ssl.enabled=true"});
  ASSERT_TRUE(cfg.ok());
  // Multi-line PEM does not fit a properties line: set the parsed values directly.
  cfg->values["metrics.ssl.keystore.key"] = key;
  cfg->values["metrics.ssl.keystore.certificate.chain"] = cert;
  auto ctx = security::make_prefixed_tls_context(*cfg, "metrics.", "metrics endpoint");
  ASSERT_TRUE(ctx.ok()) << ctx.status().message();
  HttpServerOptions o;
  o.tls = *ctx;
  auto s = serve(o);
  EXPECT_TRUE(s->tls());

  namespace asio = boost::asio;
  asio::io_context io;
  asio::ssl::context client_ctx(asio::ssl::context::tls_client);
  client_ctx.add_certificate_authority(asio::buffer(cert));
  client_ctx.set_verify_mode(asio::ssl::verify_peer);
  asio::ssl::stream<asio::ip::tcp::socket> tls(io, client_ctx);
  tls.next_layer().connect({asio::ip::make_address("127.0.0.1"), s->port()});
  tls.handshake(asio::ssl::stream_base::client);
  const std::string req = get("/metrics", "Connection: close\r\n");
  asio::write(tls, asio::buffer(req));
  std::string got;
  boost::system::error_code ec;
  char b[1024];
  for (;;) {
    size_t n = tls.read_some(asio::buffer(b), ec);
    got.append(b, n);
    if (ec) break;
  }
  EXPECT_EQ(status_of(got), 200);
  EXPECT_EQ(body_of(got), "metrics GET q=");

  // Plain HTTP to the TLS port: the handshake fails, that connection closes, the server serves.
  {
    Client plain(s->port());
    plain.send(get("/metrics"));
    EXPECT_EQ(plain.response(), "");
  }
  for (int i = 0; i < 100 && s->stats().tls_handshake_failures.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(s->stats().tls_handshake_failures.load(), 1u);
  stop_with_open_connections(o, std::string("\x16\x03\x01\x00\x10", 5));  // half a ClientHello
}

// A broker forwarding to another's https:// registry (http_call with the client side of the
// schema.registry.ssl.* keys): the peer's certificate is verified against the truststore and must
// name the host dialled; the client presents the keystore where client certificates are required.
TEST(HttpClient, HttpsWithTheRegistryKeysVerifiesThePeerAndPresentsItsCertificate) {
  auto [key, cert] = self_signed();
  auto cfg = parse_config("", {"schema.registry.ssl.client.auth=required"});
  ASSERT_TRUE(cfg.ok());
  cfg->values["schema.registry.ssl.keystore.key"] = key;
  cfg->values["schema.registry.ssl.keystore.certificate.chain"] = cert;
  cfg->values["schema.registry.ssl.truststore.certificates"] = cert;
  auto server_ctx = security::make_prefixed_tls_context(*cfg, "schema.registry.", "registry");
  ASSERT_TRUE(server_ctx.ok()) << server_ctx.status().message();
  HttpServerOptions o;
  o.tls = *server_ctx;
  auto s = serve(o);
  auto client_ctx = security::make_prefixed_client_tls_context(*cfg, "schema.registry.", "r");
  ASSERT_TRUE(client_ctx.ok()) << client_ctx.status().message();
  HttpRequest req;
  req.method = "GET";
  req.path = "/metrics";
  req.headers.emplace_back("authorization", "Basic eDp5");
  auto r =
      http_call("127.0.0.1", s->port(), req, HttpCallOptions{1000, 2000, 1 << 20, *client_ctx});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "metrics GET q=");
  // "localhost" is not the certificate's name (its SAN is IP:127.0.0.1): refused before sending.
  r = http_call("localhost", s->port(), req, HttpCallOptions{1000, 2000, 1 << 20, *client_ctx});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Errc::io_error) << r.status().message();
  // A client trusting another CA, and one without a certificate (the server requires one).
  auto [other_key, other_cert] = self_signed();
  auto stranger = parse_config("", {});
  ASSERT_TRUE(stranger.ok());
  stranger->values["schema.registry.ssl.keystore.key"] = other_key;
  stranger->values["schema.registry.ssl.keystore.certificate.chain"] = other_cert;
  stranger->values["schema.registry.ssl.truststore.certificates"] = other_cert;
  auto untrusting = security::make_prefixed_client_tls_context(*stranger, "schema.registry.", "r");
  ASSERT_TRUE(untrusting.ok());
  r = http_call("127.0.0.1", s->port(), req, HttpCallOptions{1000, 2000, 1 << 20, *untrusting});
  EXPECT_FALSE(r.ok());
  auto anonymous_cfg = parse_config("", {});
  ASSERT_TRUE(anonymous_cfg.ok());
  anonymous_cfg->values["schema.registry.ssl.truststore.certificates"] = cert;
  auto anonymous =
      security::make_prefixed_client_tls_context(*anonymous_cfg, "schema.registry.", "r");
  ASSERT_TRUE(anonymous.ok());
  r = http_call("127.0.0.1", s->port(), req, HttpCallOptions{1000, 2000, 1 << 20, *anonymous});
  EXPECT_FALSE(r.ok() && r->status == 200) << "no client certificate, none served";
  // Plain HTTP to the TLS port gets no answer.
  r = http_call("127.0.0.1", s->port(), req, HttpCallOptions{1000, 2000, 1 << 20, nullptr});
  EXPECT_FALSE(r.ok());
}

// A bad metrics.ssl.* setting fails the context with a message naming the key at fault.
TEST(MetricsTlsKeys, ErrorsNameTheKey) {
  auto error_of = [](std::vector<std::string> lines,
                     std::map<std::string, std::string> pem = {}) -> std::string {
    lines.push_back("metrics.ssl.enabled=true");
    auto c = parse_config("", lines);
    if (!c.ok()) return "parse: " + c.status().message();
    for (auto& [k, v] : pem) c->values[k] = v;
    auto ctx = security::make_prefixed_tls_context(*c, "metrics.", "metrics endpoint");
    return ctx.ok() ? "" : ctx.status().message();
  };
  auto has = [](const std::string& m, const std::string& part) {
    return m.find(part) != std::string::npos;
  };
  std::string m = error_of({});
  EXPECT_TRUE(has(m, "metrics endpoint: TLS needs metrics.ssl.keystore.location")) << m;
  m = error_of({"metrics.ssl.keystore.location=/nonexistent/x.pem"});
  EXPECT_TRUE(has(m, "metrics.ssl.keystore.location /nonexistent/x.pem")) << m;
  // The broker's own keystore is not taken for the metrics endpoint.
  m = error_of({"ssl.keystore.location=/nonexistent/broker.pem"});
  EXPECT_TRUE(has(m, "TLS needs metrics.ssl.keystore.location")) << m;

  auto [key, cert] = self_signed();
  m = error_of({}, {{"metrics.ssl.keystore.key", key}});
  EXPECT_TRUE(has(m, "metrics.ssl.keystore.key and metrics.ssl.keystore.certificate.chain")) << m;
  m = error_of(
      {}, {{"metrics.ssl.keystore.key", "junk"}, {"metrics.ssl.keystore.certificate.chain", cert}});
  EXPECT_TRUE(has(m, "metrics.ssl.keystore.key:")) << m;
  m = error_of(
      {"metrics.ssl.client.auth=required"},
      {{"metrics.ssl.keystore.key", key}, {"metrics.ssl.keystore.certificate.chain", cert}});
  EXPECT_TRUE(has(m, "metrics.ssl.client.auth=required needs metrics.ssl.truststore.location"))
      << m;
  m = error_of(
      {"metrics.ssl.truststore.location=/nonexistent/ca.pem"},
      {{"metrics.ssl.keystore.key", key}, {"metrics.ssl.keystore.certificate.chain", cert}});
  EXPECT_TRUE(has(m, "metrics.ssl.truststore.location /nonexistent/ca.pem")) << m;
  // Versions and suites are the broker-wide keys.
  m = error_of(
      {"ssl.cipher.suites=TLS_NOT_A_SUITE"},
      {{"metrics.ssl.keystore.key", key}, {"metrics.ssl.keystore.certificate.chain", cert}});
  EXPECT_TRUE(has(m, "metrics endpoint: ssl.cipher.suites: unknown cipher suite")) << m;
  m = error_of({"metrics.ssl.client.auth=requested"},
               {{"metrics.ssl.keystore.key", key},
                {"metrics.ssl.keystore.certificate.chain", cert},
                {"metrics.ssl.truststore.certificates", cert}});
  EXPECT_EQ(m, "");
}

}  // namespace
}  // namespace strata::broker
