#include "broker/net/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace strata::broker {

namespace asio = boost::asio;

Server::Server(asio::io_context& io, std::vector<asio::io_context*> connection_contexts,
               Dispatcher& dispatcher, Options options)
    : io_(io),
      connection_contexts_(std::move(connection_contexts)),
      dispatcher_(dispatcher),
      options_(std::move(options)),
      limits_(std::make_shared<const ConnectionLimits>(options_.limits)),
      idle_timer_(io) {}

Status Server::listen(const std::vector<Listener>& listeners,
                      std::vector<std::shared_ptr<const ListenerSecurity>> security) {
  for (size_t li = 0; li < listeners.size(); ++li) {
    const Listener& l = listeners[li];
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
    security_.push_back(li < security.size() ? security[li] : nullptr);
  }
  return Status::Ok();
}

void Server::start() {
  // On `io`: accept() picks each connection's context round robin, state of the io thread.
  asio::post(io_, [this] {
    for (size_t i = 0; i < acceptors_.size(); ++i) accept(i);
    if (limits_->idle_ms >= 0) schedule_idle_sweep();
  });
}

// Every connection is checked about ten times per idle period (at most once a second).
void Server::schedule_idle_sweep() {
  const int64_t every = std::clamp<int64_t>(limits_->idle_ms / 10, 10, 1000);
  idle_timer_.expires_after(std::chrono::milliseconds(every));
  idle_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard lk(mu_);
      for (auto& w : connections_) {
        if (auto c = w.lock()) c->close_if_idle(now);
      }
    }
    schedule_idle_sweep();
  });
}

bool Server::admit(const std::string& address) {
  std::lock_guard lk(mu_);
  std::erase_if(connections_, [](auto& w) {
    auto c = w.lock();
    return !c || c->closed();
  });
  if (static_cast<int64_t>(connections_.size()) >= options_.max_connections) return false;
  if (options_.max_connections_per_ip < INT32_MAX) {
    int64_t same = 0;
    for (auto& w : connections_) {
      auto c = w.lock();
      if (c && c->peer_address() == address) ++same;
    }
    if (same >= options_.max_connections_per_ip) return false;
  }
  return true;
}

void Server::accept(size_t i) {
  // The socket's executor is the context itself: the connection adds its own strand on it.
  asio::io_context& ctx =
      connection_contexts_.empty()
          ? io_
          : *connection_contexts_[next_context_++ % connection_contexts_.size()];
  acceptors_[i]->async_accept(ctx.get_executor(), [this, i](boost::system::error_code ec,
                                                            asio::ip::tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      if (!acceptors_[i]->is_open()) return;
      backoff_accept(i, ec);
      return;
    } else {
      accept_backoff_ms_ = 0;
      auto conn =
          std::make_shared<Connection>(std::move(socket), dispatcher_, limits_, security_[i]);
      if (!admit(conn->peer_address())) {
        ++refused_;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_refusal_log_ >= std::chrono::seconds(1)) {
          spdlog::warn(
              "refused {} connection(s) over max.connections={} / "
              "max.connections.per.ip={} (last from {})",
              refused_, options_.max_connections, options_.max_connections_per_ip, conn->peer());
          refused_ = 0;
          last_refusal_log_ = now;
        }
        // Never started: its socket closes when `conn` goes, and nothing was counted for it.
      } else {
        {
          std::lock_guard lk(mu_);
          connections_.push_back(conn);
        }
        conn->start();
      }
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
    idle_timer_.cancel();
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
