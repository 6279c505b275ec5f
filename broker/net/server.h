// The TCP front end: binds the configured listeners (port 0 = a free port, reported by
// bound_ports()), accepts connections and tracks them for a graceful drain at shutdown.
// Runs on the shared io_context; start()/drain() may be called from any thread.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "broker/config.h"
#include "broker/net/asio.h"
#include "broker/net/connection.h"
#include "protocol/base/result.h"

namespace strata::broker {

class Dispatcher;

class Server {
 public:
  Server(boost::asio::io_context& io, Dispatcher& dispatcher, int32_t max_request_bytes);
  Status listen(const std::vector<Listener>& listeners);
  // The listeners with the ports actually bound.
  std::vector<Listener> bound() const { return bound_; }
  void start();
  // Close the acceptors and ask every connection to finish what it accepted, then close.
  void drain();
  size_t open_connections();

 private:
  void accept(size_t i);
  void backoff_accept(size_t i, const boost::system::error_code& ec);

  boost::asio::io_context& io_;
  Dispatcher& dispatcher_;
  int32_t max_request_bytes_;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  std::vector<Listener> bound_;
  std::mutex mu_;
  std::vector<std::weak_ptr<Connection>> connections_;
  // Accept failures (io thread; one accept per acceptor is outstanding at a time).
  int accept_backoff_ms_ = 0;
  uint64_t accept_failures_ = 0;
  std::chrono::steady_clock::time_point last_accept_log_{};
};

}  // namespace strata::broker
