#include "broker/net/http_server.h"

// clang-format off
#include "broker/net/asio_ssl.h"
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
// clang-format on

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>

#include "protocol/base/base64.h"

namespace strata::broker {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Beast 1.74 speaks boost::string_view.
std::string_view sv(beast::string_view s) { return {s.data(), s.size()}; }

std::chrono::milliseconds ms(int64_t v) { return std::chrono::milliseconds(v); }

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool is_http_parse_error(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

}  // namespace

std::string HttpRequest::header(std::string_view lower_name) const {
  for (const auto& [k, v] : headers) {
    if (k == lower_name) return v;
  }
  return "";
}

std::optional<std::pair<std::string, std::string>> HttpServer::basic_credentials(
    std::string_view authorization) {
  authorization = trim(authorization);
  const size_t sp = authorization.find(' ');
  if (sp == std::string_view::npos || lower(authorization.substr(0, sp)) != "basic") {
    return std::nullopt;
  }
  auto decoded = base64_decode(trim(authorization.substr(sp + 1)));
  if (!decoded.ok()) return std::nullopt;
  const size_t colon = decoded->find(':');  // a user has no ':' (RFC 7617), a password may
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(decoded->substr(0, colon), decoded->substr(colon + 1));
}

bool HttpServer::basic_auth_matches(std::string_view authorization, const std::string& user,
                                    const std::string& password) {
  authorization = trim(authorization);
  const size_t sp = authorization.find(' ');
  if (sp == std::string_view::npos || lower(authorization.substr(0, sp)) != "basic") return false;
  auto decoded = base64_decode(trim(authorization.substr(sp + 1)));
  if (!decoded.ok()) return false;
  // Digests of equal length, so neither the user's nor the password's length shows in the time
  // taken. The configured user cannot contain ':' (RFC 7617), so "user:password" is unambiguous.
  const std::string expected = user + ":" + password;
  unsigned char a[SHA256_DIGEST_LENGTH], b[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(decoded->data()), decoded->size(), a);
  SHA256(reinterpret_cast<const unsigned char*>(expected.data()), expected.size(), b);
  return CRYPTO_memcmp(a, b, sizeof(a)) == 0;
}

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  virtual void close() = 0;  // any thread
};

struct HttpServerImpl {
  explicit HttpServerImpl(HttpServerOptions o) : opt(std::move(o)), ios(make_ios(opt.threads)) {}

  HttpServerOptions opt;
  std::map<std::string, HttpHandler> exact;
  std::vector<std::pair<std::string, HttpHandler>> prefixes;
  HttpServerStats stats;
  std::atomic<int> connections{0};
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<SessionBase>> sessions;  // mu
  uint64_t next_id = 0;                                               // mu
  std::atomic<int64_t> last_log_ms{0};
  std::atomic<uint64_t> unlogged{0};
  std::vector<std::thread> threads;
  // Declared last, destroyed first: a session destroyed with its io_context still finds the
  // registry above.
  // One io_context per thread, each connection on one of them (round robin): a shared
  // io_context run by several threads hands every completion to whichever thread it wakes, and
  // on a 2-core machine those wake-ups (futex, condition variable, scheduler) cost more than the
  // request — measured on the registry: 2x the CPU per request and a p99 of 5 ms instead of
  // 0.15 ms (docs/benchmarks.md, "Schema Registry reads"). A handler that blocks (a forwarded
  // registry write, unless `may_block` sends it to the pool below) holds only the connections of
  // its own thread; the acceptor has a thread of its own, so that new connections are taken
  // whatever the handlers do.
  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> idle_guards;
  size_t next_io = 0;  // accept strand
  asio::io_context accept_io{1};
  asio::strand<asio::io_context::executor_type> accept_strand{accept_io.get_executor()};
  tcp::acceptor acceptor{accept_strand};
  asio::steady_timer backoff{accept_strand};
  // Runs may_block requests (null without). Destroyed before the io_contexts: a request posted
  // to it after stop() joined it holds a session whose socket belongs to one of them.
  std::unique_ptr<asio::thread_pool> blocking;
  // Checks logins authenticate_at_hand cannot answer (null without it); one thread. Declared
  // after `blocking`, so destroyed before it: a check may post to the pool.
  std::unique_ptr<asio::thread_pool> auth;
  std::atomic<int> auth_queued{0};

  static std::vector<std::unique_ptr<asio::io_context>> make_ios(int n) {
    std::vector<std::unique_ptr<asio::io_context>> v;
    for (int i = 0; i < std::max(1, n); ++i) v.push_back(std::make_unique<asio::io_context>(1));
    return v;
  }

  uint64_t add(std::weak_ptr<SessionBase> s) {
    std::lock_guard lock(mu);
    sessions.emplace(++next_id, std::move(s));
    return next_id;
  }
  void remove(uint64_t id) {
    std::lock_guard lock(mu);
    sessions.erase(id);
  }

  // At most one line a second, with the count of those left out: a port scanner or a
  // misconfigured scraper must not flood the log.
  template <typename... Args>
  void log_refusal(fmt::format_string<Args...> f, Args&&... args) {
    const int64_t now = now_ms();
    int64_t last = last_log_ms.load();
    if (now - last < 1000 || !last_log_ms.compare_exchange_strong(last, now)) {
      unlogged.fetch_add(1);
      return;
    }
    const uint64_t skipped = unlogged.exchange(0);
    std::string line = fmt::format(f, std::forward<Args>(args)...);
    if (skipped) line += fmt::format(" ({} more since the last report)", skipped);
    spdlog::info("{}: {}", opt.name, line);
  }

  const HttpHandler* find_route(const std::string& path) const {
    auto it = exact.find(path);
    if (it != exact.end()) return &it->second;
    const HttpHandler* best = nullptr;
    size_t best_len = 0;
    for (const auto& [prefix, h] : prefixes) {
      if (path.starts_with(prefix) && (best == nullptr || prefix.size() > best_len)) {
        best = &h;
        best_len = prefix.size();
      }
    }
    return best;
  }

  void accept();
};

namespace {

template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  template <typename... A>
  Session(HttpServerImpl& impl, std::string peer, A&&... stream_args)
      : impl_(impl), stream_(std::forward<A>(stream_args)...), peer_(std::move(peer)) {
    impl_.connections.fetch_add(1);
  }
  ~Session() override {
    impl_.remove(id_);
    impl_.connections.fetch_sub(1);
  }

  void start(uint64_t id) {
    id_ = id;
    // The first operation starts on the session's own strand, as every later one does: started
    // from the accept strand it raced close() (posted to this strand by stop()) on the socket.
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->begin(); });
  }

  void close() override {
    asio::post(stream_.get_executor(),
               [self = this->shared_from_this()] { self->lowest().close(); });
  }

 private:
  void begin() {
    if (impl_.stopping.load()) return;  // stop() may have looked at the sessions before add()
    if constexpr (kTls) {
      lowest().expires_after(ms(impl_.opt.request_timeout_ms));
      stream_.async_handshake(
          asio::ssl::stream_base::server,
          [self = this->shared_from_this()](beast::error_code ec) { self->on_handshake(ec); });
    } else {
      read();
    }
  }

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void on_handshake(beast::error_code ec) {
    if (ec) {
      if (ec != asio::error::operation_aborted) {  // not closed by stop()
        impl_.stats.tls_handshake_failures.fetch_add(1);
        impl_.log_refusal("TLS handshake failed from {}: {}", peer_, ec.message());
      }
      return;
    }
    read();
  }

  void read() {
    if (impl_.stopping.load()) return finish();
    parser_.emplace();
    parser_->header_limit(impl_.opt.max_header_bytes);
    parser_->body_limit(impl_.opt.max_body_bytes);
    lowest().expires_after(ms(served_ ? impl_.opt.idle_timeout_ms : impl_.opt.request_timeout_ms));
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    if (ec == http::error::end_of_stream) return finish();
    if (ec == http::error::header_limit) return refuse(431, "request header too large\n");
    if (ec == http::error::body_limit) return refuse(413, "request body too large\n");
    if (ec && is_http_parse_error(ec)) return refuse(400, "bad request\n");
    if (ec) {  // timeout, reset, truncated TLS, closed by stop()
      if (parser_->got_some()) impl_.stats.bad_requests.fetch_add(1);
      return;
    }
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    head_ = req.method() == http::verb::head;
    const auto& o = impl_.opt;
    HttpRequest r;
    r.method = std::string(sv(req.method_string()));
    const std::string target(sv(req.target()));
    const size_t q = target.find('?');
    r.path = target.substr(0, q);
    if (q != std::string::npos) r.query = target.substr(q + 1);
    for (const auto& f : req) r.headers.emplace_back(lower(sv(f.name_string())), sv(f.value()));
    r.body = std::move(req.body());
    r.peer = peer_;
    bool authenticated = true;
    if (o.authenticate) {
      auto c = HttpServer::basic_credentials(r.header("authorization"));
      std::optional<bool> known;
      if (!c) {
        known = false;
      } else if (o.authenticate_at_hand) {
        known = o.authenticate_at_hand(c->first, c->second);
      }
      if (!known && impl_.auth) {
        check_on_auth_thread(std::move(c->first), std::move(c->second), std::move(r));
        return;
      }
      authenticated = known ? *known : o.authenticate(c->first, c->second);
      if (authenticated) r.user = std::move(c->first);
    } else if (!o.basic_auth_user.empty()) {
      authenticated = HttpServer::basic_auth_matches(r.header("authorization"), o.basic_auth_user,
                                                     o.basic_auth_password);
      r.user = o.basic_auth_user;
    }
    if (!authenticated) return answer(unauthorized());
    serve(std::move(r));
  }

  // A login `authenticate_at_hand` could not answer: checked on the server's one auth thread
  // (derivations run one at a time anyway), so it holds neither this thread's other connections
  // nor the pool's requests; then served as any other. At most max_queued_logins wait for it;
  // one beyond is answered 401 at once (the flood that queue would be is of wrong passwords).
  void check_on_auth_thread(std::string user, std::string password, HttpRequest r) {
    if (impl_.auth_queued.fetch_add(1) >= impl_.opt.max_queued_logins) {
      impl_.auth_queued.fetch_sub(1);
      impl_.log_refusal("{}: {} logins already wait for their check; one from {} refused",
                        impl_.opt.name, impl_.opt.max_queued_logins, peer_);
      return answer(unauthorized());
    }
    asio::post(*impl_.auth, [self = this->shared_from_this(), user = std::move(user),
                             password = std::move(password), r = std::move(r)]() mutable {
      bool ok = false;
      if (!self->impl_.stopping.load()) {  // else its connection is closed: no derivation
        try {
          ok = self->impl_.opt.authenticate(user, password);
        } catch (const std::exception& e) {
          spdlog::warn("{}: checking a login failed: {}", self->impl_.opt.name, e.what());
        }
      }
      // Out of the queue before the answer is sent: the client's next login may come at once.
      self->impl_.auth_queued.fetch_sub(1);
      if (self->impl_.stopping.load()) return;
      if (!ok) {
        asio::post(self->stream_.get_executor(), [self] { self->answer(self->unauthorized()); });
        return;
      }
      r.user = std::move(user);
      asio::post(self->stream_.get_executor(),
                 [self, r = std::move(r)]() mutable { self->serve(std::move(r)); });
    });
  }

  // An authenticated request, on the connection's thread: answered on the pool when it may
  // block (this connection reads nothing more until then, HTTP/1.1), else here.
  void serve(HttpRequest r) {
    const auto& o = impl_.opt;
    const HttpHandler* h = impl_.find_route(r.path);
    if (h != nullptr && impl_.blocking && o.may_block && o.may_block(r)) {
      asio::post(*impl_.blocking, [self = this->shared_from_this(), r = std::move(r)] {
        HttpResponse res = self->dispatch(r);
        asio::post(self->stream_.get_executor(),
                   [self, res = std::move(res)]() mutable { self->answer(std::move(res)); });
      });
      return;
    }
    answer(dispatch(r));
  }

  void answer(HttpResponse res) {
    served_ = true;
    write(std::move(res));
  }

  HttpResponse unauthorized() {
    const auto& o = impl_.opt;
    impl_.stats.unauthorized.fetch_add(1);
    HttpResponse res;
    res.status = 401;
    res.content_type = o.unauthorized_content_type;
    res.body = o.unauthorized_body;
    res.headers.emplace_back("WWW-Authenticate",
                             "Basic realm=\"" + o.realm + "\", charset=\"UTF-8\"");
    return res;
  }

  // The routed handler's answer (404 without one), on whichever thread calls it.
  HttpResponse dispatch(const HttpRequest& r) {
    const HttpHandler* h = impl_.find_route(r.path);
    if (h == nullptr) return HttpResponse{404, "text/plain; charset=utf-8", "not found\n", {}};
    return call(*h, r);
  }

  HttpResponse call(const HttpHandler& h, const HttpRequest& r) {
    try {
      return h(r);
    } catch (const std::exception& e) {
      spdlog::warn("{}: {} {} failed: {}", impl_.opt.name, r.method, r.path, e.what());
      return HttpResponse{500, "text/plain; charset=utf-8", "internal error\n", {}};
    }
  }

  // A request that cannot be answered normally: say why, then close.
  void refuse(int status, std::string body) {
    impl_.stats.bad_requests.fetch_add(1);
    keep_alive_ = false;
    head_ = false;
    write(HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}});
  }

  void write(HttpResponse r) {
    res_.emplace(static_cast<http::status>(r.status), version_ ? version_ : 11);
    res_->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res_->set(k, v);
    res_->keep_alive(keep_alive_);
    if (head_) {
      res_->content_length(r.body.size());
    } else {
      res_->body() = std::move(r.body);
      res_->prepare_payload();
    }
    lowest().expires_after(ms(impl_.opt.request_timeout_ms));
    http::async_write(stream_, *res_,
                      [self = this->shared_from_this()](beast::error_code ec, size_t) {
                        if (ec) return;
                        if (!self->keep_alive_) return self->finish();
                        self->read();
                      });
  }

  void finish() {
    if constexpr (kTls) {
      lowest().expires_after(ms(1000));
      stream_.async_shutdown(
          [self = this->shared_from_this()](beast::error_code) { self->lowest().close(); });
    } else {
      beast::error_code ec;
      lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  }

  HttpServerImpl& impl_;
  Stream stream_;
  const std::string peer_;
  uint64_t id_ = 0;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<http::response<http::string_body>> res_;
  bool served_ = false;  // a request was answered: the next one waits up to idle_timeout_ms
  bool keep_alive_ = true;
  bool head_ = false;
  unsigned version_ = 11;
};

template <class S, typename... A>
void open_session(HttpServerImpl& impl, std::string peer, A&&... args) {
  auto s = std::make_shared<Session<S>>(impl, std::move(peer), std::forward<A>(args)...);
  s->start(impl.add(s));
}

}  // namespace

void HttpServerImpl::accept() {
  asio::io_context& io = *ios[next_io++ % ios.size()];
  acceptor.async_accept(asio::make_strand(io), [this](beast::error_code ec, tcp::socket sock) {
    if (stopping.load() || !acceptor.is_open()) return;
    if (ec) {  // e.g. out of descriptors: try again a little later instead of spinning
      log_refusal("accept failed: {}", ec.message());
      backoff.expires_after(ms(100));
      backoff.async_wait([this](beast::error_code) {
        if (!stopping.load()) accept();
      });
      return;
    }
    beast::error_code pec;
    auto ep = sock.remote_endpoint(pec);
    std::string peer = pec ? "?" : ep.address().to_string();
    if (connections.load() >= opt.max_connections) {
      stats.refused_connections.fetch_add(1);
      log_refusal("refused a connection from {}: {} open (the limit)", peer, opt.max_connections);
      sock.close(pec);
    } else if (opt.tls) {
      open_session<TlsStream>(*this, std::move(peer), std::move(sock), *opt.tls);
    } else {
      open_session<beast::tcp_stream>(*this, std::move(peer), std::move(sock));
    }
    accept();
  });
}

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<HttpServerImpl>(std::move(options))) {}

HttpServer::~HttpServer() { stop(); }

void HttpServer::route(std::string path, HttpHandler handler) {
  impl_->exact[std::move(path)] = std::move(handler);
}

void HttpServer::route_prefix(std::string prefix, HttpHandler handler) {
  impl_->prefixes.emplace_back(std::move(prefix), std::move(handler));
}

bool HttpServer::tls() const { return impl_->opt.tls != nullptr; }

const HttpServerStats& HttpServer::stats() const { return impl_->stats; }

Status HttpServer::start(const std::string& host, uint16_t port) {
  HttpServerImpl& m = *impl_;
  const std::string where =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  beast::error_code ec;
  auto addr = asio::ip::make_address(host.empty() ? "0.0.0.0" : host, ec);
  if (ec) return Status(Errc::io_error, m.opt.name + ": bad address " + where);
  tcp::endpoint ep(addr, port);
  m.acceptor.open(ep.protocol(), ec);
  if (!ec) m.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) m.acceptor.bind(ep, ec);
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Errc::io_error, m.opt.name + ": cannot listen on " + where + ": " + ec.message());
  }
  port_ = m.acceptor.local_endpoint().port();
  if (m.opt.may_block) {
    m.blocking = std::make_unique<asio::thread_pool>(std::max(1, m.opt.blocking_threads));
  }
  if (m.opt.authenticate && m.opt.authenticate_at_hand) {
    m.auth = std::make_unique<asio::thread_pool>(1);
  }
  m.accept();
  m.threads.emplace_back([&m] { m.accept_io.run(); });  // until the acceptor closes
  for (auto& io : m.ios) {
    m.idle_guards.push_back(asio::make_work_guard(*io));  // run() waits for connections
    m.threads.emplace_back([&io = *io] { io.run(); });
  }
  return Status::Ok();
}

void HttpServer::stop() {
  HttpServerImpl& m = *impl_;
  if (m.threads.empty() || m.stopping.exchange(true)) return;
  asio::post(m.accept_strand, [&m] {
    beast::error_code ec;
    m.acceptor.close(ec);
    m.backoff.cancel();
  });
  // Taken out under the lock, closed (and maybe destroyed: ~Session locks mu) after it.
  std::vector<std::shared_ptr<SessionBase>> open;
  {
    std::lock_guard lock(m.mu);
    for (auto& [id, w] : m.sessions) {
      if (auto s = w.lock()) open.push_back(std::move(s));
    }
  }
  for (auto& s : open) s->close();
  open.clear();
  // Requests on the pool finish first (as a handler in progress on a connection's thread does);
  // their answers are posted to connections that are closed by now, while the threads still run.
  // The auth thread first: a login it admits may still post its request to the pool.
  if (m.auth) m.auth->join();
  if (m.blocking) m.blocking->join();
  for (auto& g : m.idle_guards) g.reset();
  m.idle_guards.clear();
  // Once every session has ended (a handler in progress returns first) run() has nothing left.
  for (auto& t : m.threads) t.join();
  m.threads.clear();
}

}  // namespace strata::broker
