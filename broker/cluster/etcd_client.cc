#include "broker/cluster/etcd_client.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "broker/cluster/etcd_json.h"
#include "broker/net/asio.h"
// clang-format off
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
// clang-format on

namespace strata::broker::cluster {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using etcd_json::json;

Result<EtcdEndpoint> parse_etcd_endpoint(const std::string& text) {
  std::string rest = text;
  if (rest.rfind("https://", 0) == 0) {
    return Status(Errc::unsupported, "etcd endpoint " + text + ": https is not supported yet");
  }
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return Status(Errc::invalid_argument, "etcd endpoint '" + text + "' is not host:port");
  }
  EtcdEndpoint ep{rest.substr(0, colon), rest.substr(colon + 1)};
  if (ep.host.size() > 2 && ep.host.front() == '[' && ep.host.back() == ']') {
    ep.host = ep.host.substr(1, ep.host.size() - 2);
  }
  if (!std::all_of(ep.port.begin(), ep.port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status(Errc::invalid_argument, "etcd endpoint '" + text + "': bad port");
  }
  return ep;
}

struct EtcdClient::Shared {
  EtcdOptions options;
  std::atomic<size_t> current{0};  // the member that answered last

  // Sends to the member that answered last, moving on while a member is unreachable or
  // unavailable.
  Result<json> call(const std::string& path, const json& body);
};

namespace {

constexpr size_t kMaxAnswerBytes = 64u << 20;

struct Outcome {
  enum class Kind { not_sent, no_answer, answered };
  Kind kind = Kind::not_sent;
  Status status;
  json body;
};

std::string describe(const EtcdEndpoint& ep) { return ep.host + ":" + ep.port; }

// Connects within the connect timeout; the stream is left open on success.
boost::system::error_code connect(asio::io_context& ioc, beast::tcp_stream& stream,
                                  const EtcdEndpoint& ep, int timeout_ms) {
  boost::system::error_code ec;
  tcp::resolver resolver(ioc);
  auto results = resolver.resolve(ep.host, ep.port, ec);
  if (ec) return ec;
  stream.expires_after(std::chrono::milliseconds(timeout_ms));
  boost::system::error_code result = asio::error::would_block;
  stream.async_connect(results,
                       [&](boost::system::error_code e, const tcp::endpoint&) { result = e; });
  ioc.restart();
  ioc.run();
  return result;
}

http::request<http::string_body> post_request(const EtcdEndpoint& ep, const std::string& path,
                                              std::string payload) {
  http::request<http::string_body> req{http::verb::post, path, 11};
  req.set(http::field::host, describe(ep));
  req.set(http::field::content_type, "application/json");
  req.body() = std::move(payload);
  req.prepare_payload();
  return req;
}

Outcome post_once(const EtcdOptions& o, const EtcdEndpoint& ep, const std::string& path,
                  const std::string& payload) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  Outcome out;
  if (auto ec = connect(ioc, stream, ep, o.connect_timeout_ms)) {
    out.status = Status(Errc::io_error, "etcd " + describe(ep) + ": connect: " + ec.message());
    return out;
  }
  out.kind = Outcome::Kind::no_answer;
  auto req = post_request(ep, path, payload);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxAnswerBytes);
  boost::system::error_code result = asio::error::would_block;
  stream.expires_after(std::chrono::milliseconds(o.request_timeout_ms));
  http::async_write(stream, req, [&](boost::system::error_code e, size_t) {
    if (e) {
      result = e;
      return;
    }
    http::async_read(stream, buf, parser,
                     [&](boost::system::error_code e2, size_t) { result = e2; });
  });
  ioc.restart();
  ioc.run();
  if (result) {
    out.status = Status(Errc::io_error, "etcd " + describe(ep) + " " + path +
                                            ": no answer (outcome unknown): " + result.message());
    return out;
  }
  out.body = json::parse(parser.get().body(), nullptr, false);
  if (out.body.is_discarded()) {
    out.status = Status(Errc::corruption, "etcd " + describe(ep) + " " + path + ": HTTP " +
                                              std::to_string(parser.get().result_int()) +
                                              " with a body that is not JSON");
    return out;
  }
  out.kind = Outcome::Kind::answered;
  return out;
}

}  // namespace

Result<json> EtcdClient::Shared::call(const std::string& path, const json& body) {
  const EtcdOptions& o = options;
  const std::string payload = body.dump();
  const size_t n = o.endpoints.size();
  if (n == 0) return Status(Errc::invalid_argument, "no etcd endpoints configured");
  const size_t first = current.load();
  Status last;
  for (size_t i = 0; i < n; ++i) {
    const size_t idx = (first + i) % n;
    Outcome r = post_once(o, o.endpoints[idx], path, payload);
    if (r.kind == Outcome::Kind::answered && !etcd_json::is_unavailable(r.body)) {
      current.store(idx);
      if (Status st = etcd_json::error_of(r.body); !st.ok()) return st;
      return std::move(r.body);
    }
    if (r.kind == Outcome::Kind::no_answer) return r.status;  // may have been applied
    last = r.kind == Outcome::Kind::answered ? etcd_json::error_of(r.body) : r.status;
  }
  return last;
}

EtcdClient::EtcdClient(EtcdOptions options) : shared_(std::make_shared<Shared>()) {
  shared_->options = std::move(options);
}

Result<RangeResult> EtcdClient::range(const std::string& key, const std::string& range_end) {
  auto r = shared_->call("/v3/kv/range", etcd_json::range_request(key, range_end));
  if (!r.ok()) return r.status();
  return etcd_json::decode_range(*r);
}

Result<int64_t> EtcdClient::put(const std::string& key, const std::string& value, int64_t lease) {
  auto r = shared_->call("/v3/kv/put", etcd_json::put_request(key, value, lease));
  if (!r.ok()) return r.status();
  return etcd_json::header_revision(*r);
}

Result<int64_t> EtcdClient::delete_range(const std::string& key, const std::string& range_end) {
  auto r = shared_->call("/v3/kv/deleterange", etcd_json::delete_request(key, range_end));
  if (!r.ok()) return r.status();
  return etcd_json::int_field(*r, "deleted");
}

Result<TxnResult> EtcdClient::txn(const std::vector<Compare>& compares,
                                  const std::vector<TxnOp>& success,
                                  const std::vector<TxnOp>& failure) {
  auto r = shared_->call("/v3/kv/txn", etcd_json::txn_request(compares, success, failure));
  if (!r.ok()) return r.status();
  return etcd_json::decode_txn(*r);
}

Result<int64_t> EtcdClient::grant_lease(int64_t ttl_seconds) {
  auto r = shared_->call("/v3/lease/grant", json({{"TTL", std::to_string(ttl_seconds)}}));
  if (!r.ok()) return r.status();
  const int64_t id = etcd_json::int_field(*r, "ID");
  if (id == 0) return Status(Errc::io_error, "etcd granted no lease: " + r->dump());
  return id;
}

Status EtcdClient::keep_alive(int64_t lease) {
  auto r = shared_->call("/v3/lease/keepalive", json({{"ID", std::to_string(lease)}}));
  if (!r.ok()) return r.status();
  auto result = r->find("result");
  // An expired or revoked lease is answered without a TTL (proto3 omits the zero).
  if (result == r->end() || etcd_json::int_field(*result, "TTL") <= 0) {
    return Status(Errc::not_found, "etcd lease " + std::to_string(lease) + " has expired");
  }
  return Status::Ok();
}

Status EtcdClient::revoke_lease(int64_t lease) {
  auto r = shared_->call("/v3/lease/revoke", json({{"ID", std::to_string(lease)}}));
  return r.ok() ? Status::Ok() : r.status();
}

Status EtcdClient::compact(int64_t revision) {
  auto r = shared_->call("/v3/kv/compaction", json({{"revision", std::to_string(revision)}}));
  return r.ok() ? Status::Ok() : r.status();
}

namespace {

// One watch: a thread that keeps a streaming /v3/watch request open, decodes its messages and
// resumes on the next member after a connection loss.
class EtcdWatch : public Watch {
 public:
  EtcdWatch(EtcdOptions options, size_t first_endpoint, std::string key, std::string range_end,
            int64_t start_revision, Coordination::WatchFn fn)
      : options_(std::move(options)),
        endpoint_(first_endpoint),
        key_(std::move(key)),
        range_end_(std::move(range_end)),
        next_revision_(start_revision),
        fn_(std::move(fn)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~EtcdWatch() override { cancel(); }

  void cancel() override {
    {
      std::lock_guard lk(mu_);
      if (stopped_) {
        if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
        return;
      }
      stopped_ = true;
      if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);  // wakes the blocked read
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

 private:
  bool stopped() {
    std::lock_guard lk(mu_);
    return stopped_;
  }

  void loop() {
    int backoff_ms = 50;
    bool announced_loss = false;
    while (!stopped()) {
      const EtcdEndpoint& ep = options_.endpoints[endpoint_ % options_.endpoints.size()];
      const Status st = stream_once(ep);
      if (stopped() || done_) return;
      if (!announced_loss) {
        spdlog::warn("etcd watch on {}: {}; resuming from revision {} on the next member",
                     describe(ep), st.to_string(), next_revision_);
        announced_loss = true;
      }
      ++endpoint_;
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(backoff_ms), [this] { return stopped_; });
      backoff_ms = std::min(backoff_ms * 2, options_.watch_retry_max_ms);
      if (streamed_) {  // the last attempt worked for a while: start the backoff over
        backoff_ms = 50;
        announced_loss = false;
        streamed_ = false;
      }
    }
  }

  // One connection: returns when it breaks (the caller reconnects) or the watch ends (done_).
  Status stream_once(const EtcdEndpoint& ep) {
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    if (auto ec = connect(ioc, stream, ep, options_.connect_timeout_ms)) {
      return Status(Errc::io_error, "connect: " + ec.message());
    }
    stream.expires_never();
    tcp::socket& sock = stream.socket();
    {
      std::lock_guard lk(mu_);
      if (stopped_) return Status(Errc::shutting_down, "cancelled");
      fd_ = sock.native_handle();
    }
    struct ClearFd {
      EtcdWatch* w;
      ~ClearFd() {
        std::lock_guard lk(w->mu_);
        w->fd_ = -1;
      }
    } clear{this};
    auto req = post_request(
        ep, "/v3/watch", etcd_json::watch_create_request(key_, range_end_, next_revision_).dump());
    boost::system::error_code ec;
    http::write(sock, req, ec);
    if (ec) return Status(Errc::io_error, "send: " + ec.message());
    beast::flat_buffer buf;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(sock, buf, parser, ec);
    if (ec) return Status(Errc::io_error, "read: " + ec.message());
    if (parser.get().result() != http::status::ok) {
      return Status(Errc::io_error, "HTTP " + std::to_string(parser.get().result_int()));
    }
    etcd_json::ObjectSplitter splitter;
    char chunk[16384];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof(chunk);
      http::read_some(sock, buf, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) return Status(Errc::io_error, "read: " + ec.message());
      const size_t n = sizeof(chunk) - parser.get().body().size;
      for (const auto& text : splitter.feed(std::string_view(chunk, n))) {
        if (Status st = deliver(text); !st.ok()) return st;
        if (done_) return Status::Ok();
      }
      if (splitter.overflowed()) return Status(Errc::too_large, "watch message over 64 MiB");
    }
    return Status(Errc::io_error, "the member ended the watch stream");
  }

  Status deliver(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) return Status(Errc::corruption, "watch message is not JSON");
    auto m = etcd_json::decode_watch_message(j);
    if (!m.ok()) return m.status();
    if (m->created) {
      // From "now": a reconnect must not miss what happens after this revision.
      if (next_revision_ == 0) next_revision_ = m->revision + 1;
      streamed_ = true;
      return Status::Ok();
    }
    if (m->canceled) {
      if (m->compact_revision > 0) {
        WatchBatch b;
        b.revision = m->revision;
        b.compact_revision = m->compact_revision;
        done_ = true;
        if (!stopped()) fn_(b);
        return Status::Ok();
      }
      return Status(Errc::io_error, "watch cancelled by etcd: " + m->cancel_reason);
    }
    if (m->events.empty()) return Status::Ok();  // progress notification
    WatchBatch b;
    b.revision = m->revision;
    b.events = std::move(m->events);
    next_revision_ = std::max(next_revision_, b.events.back().kv.mod_revision + 1);
    if (!stopped()) fn_(b);
    return Status::Ok();
  }

  const EtcdOptions options_;
  size_t endpoint_;
  const std::string key_;
  const std::string range_end_;
  int64_t next_revision_;  // watch thread only
  bool done_ = false;      // watch thread only: compaction ended the watch
  bool streamed_ = false;  // watch thread only
  Coordination::WatchFn fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  int fd_ = -1;
  std::thread thread_;
};

}  // namespace

Result<std::unique_ptr<Watch>> EtcdClient::watch(const std::string& key,
                                                 const std::string& range_end,
                                                 int64_t start_revision, WatchFn fn) {
  if (shared_->options.endpoints.empty()) {
    return Status(Errc::invalid_argument, "no etcd endpoints configured");
  }
  return std::unique_ptr<Watch>(new EtcdWatch(shared_->options, shared_->current.load(), key,
                                              range_end, start_revision, std::move(fn)));
}

}  // namespace strata::broker::cluster
