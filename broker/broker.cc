#include "broker/broker.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "broker/dispatch.h"
#include "broker/net/server.h"
#include "storage/env.h"
#include "storage/log_manager.h"

namespace strata::broker {

namespace asio = boost::asio;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Broker::Broker(BrokerConfig config, storage::Env* env)
    : config_(std::move(config)),
      env_(env ? env : storage::default_env()),
      work_(asio::make_work_guard(io_)),
      signals_(io_, SIGINT, SIGTERM),
      flush_timer_(io_),
      shutdown_timer_(io_) {}

Broker::~Broker() = default;

const std::string& Broker::cluster_id() const { return logs_->cluster_id(); }

Status Broker::start() {
  auto logs = storage::LogManager::open(
      env_, config_.log_dirs, config_.node_id, [this](const storage::TopicMeta& meta) {
        return resolve_topic_config(meta.configs, config_).log;
      });
  if (!logs.ok()) return logs.status();
  logs_ = std::move(logs.value());
  topics_ = std::make_unique<TopicRegistry>(*logs_, config_);
  STRATA_RETURN_IF_ERROR(topics_->load());

  dispatcher_ = std::make_unique<RequestDispatcher>(*this);
  server_ = std::make_unique<Server>(io_, *dispatcher_, config_.socket_request_max_bytes);
  STRATA_RETURN_IF_ERROR(server_->listen(config_.listeners));
  bound_ = server_->bound();
  advertised_ = bound_.front();
  if (!config_.advertised_listeners.empty()) {
    advertised_ = config_.advertised_listeners.front();
    if (advertised_.port == 0) advertised_.port = bound_.front().port;
  }
  if (advertised_.host.empty() || advertised_.host == "0.0.0.0") advertised_.host = "127.0.0.1";
  server_->start();
  signals_.async_wait([this](boost::system::error_code ec, int sig) {
    if (!ec) {
      spdlog::info("signal {} received: shutting down", sig);
      shutdown();
    }
  });
  schedule_flush();
  for (const auto& b : bound_) {
    spdlog::info("listening on {}://{}:{} (cluster {}, node {}, {} topics)", b.name, b.host, b.port,
                 cluster_id(), config_.node_id, topics_->list().size());
  }
  return Status::Ok();
}

void Broker::schedule_flush() {
  flush_timer_.expires_after(std::chrono::milliseconds(config_.log_flush_scheduler_interval_ms));
  flush_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    Status st = logs_->flush_if_due_all(now_ms());
    if (!st.ok()) spdlog::error("scheduled flush failed: {}", st.to_string());
    schedule_flush();
  });
}

void Broker::run() {
  unsigned n = config_.num_io_threads > 0 ? static_cast<unsigned>(config_.num_io_threads)
                                          : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned i = 1; i < n; ++i) threads.emplace_back([this] { io_.run(); });
  io_.run();
  for (auto& t : threads) t.join();
  Status st = logs_->close_all();
  if (!st.ok()) spdlog::error("closing logs: {}", st.to_string());
  spdlog::info("shut down cleanly");
}

void Broker::shutdown() {
  if (stopping_.exchange(true)) return;
  asio::post(io_, [this] {
    boost::system::error_code ec;
    signals_.cancel(ec);
    flush_timer_.cancel();
    server_->drain();
    watchers_.wake_all();  // long-polling fetches answer now
    finish_shutdown();
  });
}

// Waits (up to ~10 s) for connections to answer what they accepted, then stops the I/O threads.
void Broker::finish_shutdown() {
  if (server_->open_connections() == 0 || ++shutdown_polls_ > 200) {
    work_.reset();
    io_.stop();
    return;
  }
  watchers_.wake_all();
  shutdown_timer_.expires_after(std::chrono::milliseconds(50));
  shutdown_timer_.async_wait([this](boost::system::error_code) { finish_shutdown(); });
}

}  // namespace strata::broker
