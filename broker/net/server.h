// The TCP front end: binds the configured listeners (port 0 = a free port, reported by
// bound_ports()), accepts connections and tracks them for a graceful drain at shutdown.
// Acceptors, the idle sweep and the accept back-off run on `io`; each accepted connection lives
// on one of the connection contexts (round robin), whose one thread reads, handles and answers
// its requests. start()/drain() may be called from any thread.
#pragma once

#include <chrono>
#include <climits>
#include <memory>
#include <mutex>
#include <vector>

#include "broker/config/config.h"
#include "broker/net/asio.h"
#include "broker/net/connection.h"
#include "broker/net/listener_security.h"
#include "protocol/base/result.h"

namespace strata::broker {

class Dispatcher;

class Server {
 public:
  struct Options {
    ConnectionLimits limits;
    int32_t max_connections = INT32_MAX;         // max.connections
    int32_t max_connections_per_ip = INT32_MAX;  // max.connections.per.ip
  };
  // `connection_contexts` empty: connections live on `io` too.
  Server(boost::asio::io_context& io, std::vector<boost::asio::io_context*> connection_contexts,
         Dispatcher& dispatcher, Options options);
  // security[i] belongs to listeners[i] (missing or null: PLAINTEXT).
  Status listen(const std::vector<Listener>& listeners,
                std::vector<std::shared_ptr<const ListenerSecurity>> security = {});
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
  const std::vector<boost::asio::io_context*> connection_contexts_;
  size_t next_context_ = 0;  // round robin (io thread)
  Dispatcher& dispatcher_;
  const Options options_;
  const std::shared_ptr<const ConnectionLimits> limits_;
  boost::asio::steady_timer idle_timer_;
  void schedule_idle_sweep();
  // Admission: over max.connections or max.connections.per.ip, a new connection is closed at
  // once (Kafka closes it too); counted over live connections (mu_).
  bool admit(const std::string& address);
  uint64_t refused_ = 0;  // since the last report (io thread)
  std::chrono::steady_clock::time_point last_refusal_log_{};
  std::vector<std::unique_ptr<boost::asio::ip::tcp::acceptor>> acceptors_;
  std::vector<Listener> bound_;
  std::vector<std::shared_ptr<const ListenerSecurity>> security_;  // per acceptor
  std::mutex mu_;
  std::vector<std::weak_ptr<Connection>> connections_;
  // Accept failures (io thread; one accept per acceptor is outstanding at a time).
  int accept_backoff_ms_ = 0;
  uint64_t accept_failures_ = 0;
  std::chrono::steady_clock::time_point last_accept_log_{};
};

}  // namespace strata::broker
