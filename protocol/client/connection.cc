#include "protocol/client/connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include "protocol/client/tls_session.h"
#include "protocol/ext/api_keys.h"
#include "protocol/messages/api_versions.h"

namespace strata::client {
namespace {

constexpr int32_t kMaxResponseBytes = 256 << 20;

int64_t now_ms() { return steady_now_ms(); }

}  // namespace

// A broker id: decimal digits only, the whole string, in int32 range ("1abc", "+1", " 1" fail).
std::optional<int32_t> parse_node_id(const std::string& s) {
  int32_t v = 0;
  const char* end = s.data() + s.size();
  if (s.empty() || s[0] < '0' || s[0] > '9') return std::nullopt;
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

Result<std::pair<std::string, int>> parse_host_port(const std::string& s) {
  std::string host;
  std::string port;
  if (!s.empty() && s[0] == '[') {
    const size_t close = s.find(']');
    if (close == std::string::npos) return Status(Errc::invalid_argument, "bad address: " + s);
    host = s.substr(1, close - 1);
    if (close + 1 < s.size()) {
      if (s[close + 1] != ':') return Status(Errc::invalid_argument, "bad address: " + s);
      port = s.substr(close + 2);
    }
  } else {
    const size_t colon = s.rfind(':');
    host = colon == std::string::npos ? s : s.substr(0, colon);
    if (colon != std::string::npos) port = s.substr(colon + 1);
  }
  if (host.empty()) return Status(Errc::invalid_argument, "bad address (no host): " + s);
  int p = 9092;
  if (!port.empty()) {
    const char* end = port.data() + port.size();
    auto [ptr, ec] = std::from_chars(port.data(), end, p);
    if (port[0] < '0' || port[0] > '9' || ec != std::errc() || ptr != end || p <= 0 || p > 65535) {
      return Status(Errc::invalid_argument, "bad port in address: " + s);
    }
  }
  return std::make_pair(host, p);
}

Connection::Connection(int fd, std::string host, int port, ConnectionOptions opts)
    : fd_(fd), host_(std::move(host)), port_(port), opts_(std::move(opts)) {}

Connection::~Connection() { close(); }

void Connection::close() {
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<std::unique_ptr<Connection>> Connection::open(const std::string& host, int port,
                                                     const ConnectionOptions& opts) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port_s = std::to_string(port);
  const int gai = ::getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res);
  if (gai != 0) return connection_status("cannot resolve " + where + ": " + gai_strerror(gai));
  std::string last_error = "no address";
  int fd = -1;
  const int64_t deadline = now_ms() + opts.connect_timeout_ms;
  for (addrinfo* a = res; a != nullptr && fd < 0; a = a->ai_next) {
    int s = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int rc = ::connect(s, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      const int w = wait_fd(s, POLLOUT, deadline);
      if (w <= 0) {
        last_error = w == 0 ? "connect timed out" : std::strerror(errno);
        ::close(s);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc != 0) {
      last_error = std::strerror(errno);
      ::close(s);
      continue;
    }
    int one = 1;
    ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    fd = s;
  }
  ::freeaddrinfo(res);
  if (fd < 0) return connection_status("cannot connect to " + where + ": " + last_error);
  std::unique_ptr<Connection> c(new Connection(fd, host, port, opts));
  if (opts.security.tls()) {
    auto tls = TlsSession::handshake(fd, host, opts.security, deadline);
    if (!tls.ok()) return connection_status(where + ": " + tls.status().message());
    c->tls_ = std::move(*tls);
  }
  Status st = c->negotiate();
  if (!st.ok()) return st;
  if (opts.security.sasl()) {
    st = c->authenticate();
    if (!st.ok()) return st;
  }
  return c;
}

Status Connection::negotiate() {
  for (int16_t v : {int16_t{3}, int16_t{0}}) {
    protocol::ApiVersionsRequest req;
    req.client_software_name = "strata-client";
    req.client_software_version = "0.1.0";
    protocol::Writer w(64);
    const int32_t corr = begin_frame(w, protocol::ApiVersionsRequest::kApiKey, v,
                                     protocol::request_header_version(18, v));
    req.encode(w, v);
    auto frame = exchange(w, corr, 0, 0);
    if (!frame.ok()) return frame.status();
    protocol::ApiVersionsResponse resp;
    try {
      protocol::Reader r(frame->first.data() + frame->second, frame->first.size() - frame->second);
      // An UNSUPPORTED_VERSION answer is always a v0 body.
      const int16_t err_peek = r.remaining() >= 2
                                   ? static_cast<int16_t>((frame->first[frame->second] << 8) |
                                                          frame->first[frame->second + 1])
                                   : 0;
      resp.decode(r, err_peek == 35 ? 0 : v);
    } catch (const protocol::DecodeError& e) {
      close();
      return connection_status(std::string("undecodable ApiVersions response: ") + e.what());
    }
    if (resp.error_code == protocol::ErrorCode::unsupported_version && v != 0) continue;
    if (resp.error_code != protocol::ErrorCode::none)
      return kafka_status(resp.error_code, "ApiVersions");
    versions_.clear();
    for (const auto& k : resp.api_keys) versions_[k.api_key] = {k.min_version, k.max_version};
    return Status::Ok();
  }
  return kafka_status(35, "ApiVersions");
}

Result<int16_t> Connection::version_for(int16_t api_key, int16_t our_min, int16_t our_max) const {
  auto it = versions_.find(api_key);
  if (it == versions_.end()) {
    return kafka_status(35, "api key " + std::to_string(api_key) + " not offered by " + host_ +
                                ":" + std::to_string(port_));
  }
  const int16_t lo = std::max(our_min, it->second.first);
  const int16_t hi = std::min(our_max, it->second.second);
  if (lo > hi) {
    return kafka_status(35, "api key " + std::to_string(api_key) + ": broker speaks v" +
                                std::to_string(it->second.first) + "-" +
                                std::to_string(it->second.second));
  }
  return hi;
}

int32_t Connection::begin_frame(protocol::Writer& w, int16_t api_key, int16_t version,
                                int16_t header_version) {
  w.write_int32(0);
  protocol::RequestHeader h;
  h.request_api_key = api_key;
  h.request_api_version = version;
  h.correlation_id = next_corr_++;
  h.client_id = opts_.client_id;
  h.encode(w, header_version);
  return h.correlation_id;
}

Result<std::pair<std::vector<uint8_t>, size_t>> Connection::exchange(protocol::Writer& w,
                                                                     int32_t corr,
                                                                     int16_t resp_header_version,
                                                                     int extra_timeout_ms) {
  if (fd_ < 0) return connection_status("connection to " + host_ + " is closed");
  w.patch_int32(0, static_cast<int32_t>(w.size() - 4));
  const int64_t deadline = now_ms() + opts_.request_timeout_ms + extra_timeout_ms;
  STRATA_RETURN_IF_ERROR(send_all(w.buffer().data(), w.size(), deadline));
  uint8_t size_buf[4];
  STRATA_RETURN_IF_ERROR(recv_all(size_buf, 4, deadline));
  const int32_t size =
      static_cast<int32_t>((uint32_t{size_buf[0]} << 24) | (uint32_t{size_buf[1]} << 16) |
                           (uint32_t{size_buf[2]} << 8) | uint32_t{size_buf[3]});
  if (size < 4 || size > kMaxResponseBytes) {
    close();
    return connection_status("bad response frame size " + std::to_string(size));
  }
  std::vector<uint8_t> frame(static_cast<size_t>(size));
  STRATA_RETURN_IF_ERROR(recv_all(frame.data(), frame.size(), deadline));
  protocol::Reader r(frame.data(), frame.size());
  protocol::ResponseHeader h;
  try {
    h.decode(r, resp_header_version);
  } catch (const protocol::DecodeError& e) {
    close();
    return connection_status(std::string("bad response header: ") + e.what());
  }
  if (h.correlation_id != corr) {
    close();
    return connection_status("correlation id mismatch (sent " + std::to_string(corr) + ", got " +
                             std::to_string(h.correlation_id) + ")");
  }
  const size_t body = r.position();
  return std::make_pair(std::move(frame), body);
}

Status Connection::call_ext(int16_t api_key, const google::protobuf::MessageLite& req,
                            google::protobuf::MessageLite& resp, int extra_timeout_ms) {
  const protocol::ext::ApiInfo* api = protocol::ext::find_api(api_key);
  if (!api)
    return Status(Errc::invalid_argument, "unknown extension api key " + std::to_string(api_key));
  auto v = version_for(api_key, api->min_version, api->max_version);
  if (!v.ok()) return v.status();
  protocol::Writer w(req.ByteSizeLong() + 64);
  const int32_t corr = begin_frame(w, api_key, *v, 2);
  const size_t at = w.size();
  const size_t n = req.ByteSizeLong();
  w.buffer().resize(at + n);
  if (n > 0 && !req.SerializeToArray(w.buffer().data() + at, static_cast<int>(n))) {
    return Status(Errc::invalid_argument, "INVALID_REQUEST: cannot serialise request");
  }
  auto frame = exchange(w, corr, 1, extra_timeout_ms);
  if (!frame.ok()) return frame.status();
  const auto& f = frame->first;
  if (!resp.ParseFromArray(f.data() + frame->second, static_cast<int>(f.size() - frame->second))) {
    return connection_status("undecodable response body for api " + std::to_string(api_key));
  }
  return Status::Ok();
}

Status Connection::send_all(const uint8_t* data, size_t n, int64_t deadline_ms) {
  if (tls_) {
    Status st = tls_->write_all(fd_, data, n, deadline_ms);
    if (st.ok()) return st;
    close();
    return connection_status("send to " + host_ + ":" + std::to_string(port_) + ": " +
                             st.message());
  }
  size_t done = 0;
  while (done < n) {
    const ssize_t k = ::send(fd_, data + done, n - done, MSG_NOSIGNAL);
    if (k > 0) {
      done += static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      const int w = wait_fd(fd_, POLLOUT, deadline_ms);
      if (w == 1) continue;
      close();
      return connection_status(w == 0 ? "send to " + host_ + " timed out"
                                      : "send failed: " + std::string(std::strerror(errno)));
    }
    const std::string why = std::strerror(errno);
    close();
    return connection_status("send to " + host_ + ":" + std::to_string(port_) + " failed: " + why);
  }
  return Status::Ok();
}

Status Connection::recv_all(uint8_t* data, size_t n, int64_t deadline_ms) {
  if (tls_) {
    Status st = tls_->read_all(fd_, data, n, deadline_ms);
    if (st.ok()) return st;
    close();
    return connection_status("request to " + host_ + ":" + std::to_string(port_) + ": " +
                             st.message());
  }
  size_t done = 0;
  while (done < n) {
    const ssize_t k = ::recv(fd_, data + done, n - done, 0);
    if (k > 0) {
      done += static_cast<size_t>(k);
      continue;
    }
    if (k == 0) {
      close();
      return connection_status("broker " + host_ + ":" + std::to_string(port_) +
                               " closed the connection");
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      const int w = wait_fd(fd_, POLLIN, deadline_ms);
      if (w == 1) continue;
      close();
      return connection_status(w == 0 ? "request to " + host_ + ":" + std::to_string(port_) +
                                            " timed out"
                                      : "recv failed: " + std::string(std::strerror(errno)));
    }
    const std::string why = std::strerror(errno);
    close();
    return connection_status("recv from " + host_ + " failed: " + why);
  }
  return Status::Ok();
}

}  // namespace strata::client
