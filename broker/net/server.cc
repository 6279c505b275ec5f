#include "broker/net/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace strata::broker {

namespace asio = boost::asio;

Server::Server(asio::io_context& io, Dispatcher& dispatcher, int32_t max_request_bytes)
    : io_(io), dispatcher_(dispatcher), max_request_bytes_(max_request_bytes) {}

Status Server::listen(const std::vector<Listener>& listeners) {
  for (const auto& l : listeners) {
    boost::system::error_code ec;
    asio::ip::tcp::resolver resolver(io_);
    auto results =
        resolver.resolve(l.host.empty() ? "0.0.0.0" : l.host, std::to_string(l.port), ec);
    if (ec || results.empty()) {
      return Status(Errc::invalid_argument,
                    "cannot resolve listener host " + l.host + ": " + ec.message());
    }
    auto ep = results.begin()->endpoint();
    auto acc = std::make_unique<asio::ip::tcp::acceptor>(io_);
    acc->open(ep.protocol(), ec);
    if (!ec) acc->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acc->bind(ep, ec);
    if (!ec) acc->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status(Errc::io_error, "cannot listen on " + l.host + ":" + std::to_string(l.port) +
                                        ": " + ec.message());
    }
    Listener b = l;
    b.port = acc->local_endpoint().port();
    bound_.push_back(b);
    acceptors_.push_back(std::move(acc));
  }
  return Status::Ok();
}

void Server::start() {
  for (size_t i = 0; i < acceptors_.size(); ++i) accept(i);
}

void Server::accept(size_t i) {
  acceptors_[i]->async_accept(asio::make_strand(io_), [this, i](boost::system::error_code ec,
                                                                asio::ip::tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      if (!acceptors_[i]->is_open()) return;
      backoff_accept(i, ec);
      return;
    } else {
      accept_backoff_ms_ = 0;
      auto conn = std::make_shared<Connection>(std::move(socket), dispatcher_, max_request_bytes_);
      {
        std::lock_guard lk(mu_);
        std::erase_if(connections_, [](auto& w) { return w.expired(); });
        connections_.push_back(conn);
      }
      conn->start();
    }
    if (acceptors_[i]->is_open()) accept(i);
  });
}

// accept(2) failing (EMFILE/ENFILE when the process or system is out of descriptors, ENOBUFS,
// ENOMEM) is transient: re-arming at once would spin a core and write millions of log lines while
// the condition lasts. Wait 10 ms doubling to 1 s, log at most once a second, and keep serving
// the connections already open; the pending connection stays in the listen backlog meanwhile.
void Server::backoff_accept(size_t i, const boost::system::error_code& ec) {
  accept_backoff_ms_ = std::clamp(accept_backoff_ms_ * 2, 10, 1000);
  ++accept_failures_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_accept_log_ >= std::chrono::seconds(1)) {
    spdlog::warn("accept failed: {} ({} failure(s) since the last report); retrying in {} ms",
                 ec.message(), accept_failures_, accept_backoff_ms_);
    accept_failures_ = 0;
    last_accept_log_ = now;
  }
  auto timer = std::make_shared<asio::steady_timer>(io_);
  timer->expires_after(std::chrono::milliseconds(accept_backoff_ms_));
  timer->async_wait([this, i, timer](boost::system::error_code tec) {
    if (tec || !acceptors_[i]->is_open()) return;
    accept(i);
  });
}

void Server::drain() {
  asio::post(io_, [this] {
    for (auto& a : acceptors_) {
      boost::system::error_code ec;
      a->close(ec);
    }
  });
  std::lock_guard lk(mu_);
  for (auto& w : connections_) {
    if (auto c = w.lock()) c->drain();
  }
}

size_t Server::open_connections() {
  std::lock_guard lk(mu_);
  size_t n = 0;
  for (auto& w : connections_) {
    auto c = w.lock();
    if (c && !c->closed()) ++n;
  }
  return n;
}

}  // namespace strata::broker
