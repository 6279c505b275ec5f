// Broker: owns the process-wide services and their lifecycle: start() opens storage, recovers PK
// states and binds listeners, run() serves (num.io.threads connection threads plus the calling
// thread for timers, signals and accepts) until SIGTERM/SIGINT or shutdown(), then drains
// connections (in-flight requests answered) and flushes and closes every log. Handlers never see
// it: they get the services through RequestContext::svc (broker/services.h). Used by main.cc and
// tests; accessors are safe from any thread once start() has returned.
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "broker/config/config.h"
#include "broker/config/dynamic_config.h"
#include "broker/net/asio.h"
#include "broker/net/asio_ssl.h"
#include "broker/topics/partition_watchers.h"
#include "broker/topics/topic_registry.h"
#include "protocol/base/result.h"

namespace strata::storage {
class Env;
class LogManager;
}  // namespace strata::storage

namespace strata::broker::group {
class AsioTimers;
class GroupCoordinator;
class LogGroupJournal;
}  // namespace strata::broker::group

namespace strata::broker::security {
class SaslAuthenticator;
}  // namespace strata::broker::security

namespace strata::broker {

class Server;
class ProducerIdManager;  // Idempotent producer
class LogTasks;           // Retention and log cleaner threads
class RequestDispatcher;
class PkTables;     // primary-key tables (broker/pk/pk_tables.h)
namespace schema {  // the embedded Schema Registry (broker/schema/)
class SchemaRegistry;
class RegistryRouter;
class SchemaSource;
class RegistryServer;
struct RegistryAddress;
}  // namespace schema
namespace metrics {  // Prometheus metrics (broker/metrics/)
class BrokerMetrics;
class MetricsExporter;
}  // namespace metrics
class ScanSessions;  // open Scans (broker/pk/scan_sessions.h)
namespace quota {    // client quotas (broker/quota/)
class ClientQuotas;
}  // namespace quota
struct Services;     // what handlers use (broker/services.h)
namespace cluster {  // cluster mode (broker/cluster/cluster_node.h)
class ClusterNode;
}  // namespace cluster
namespace txn {  // transactions (broker/txn/txn_coordinator.h)
class TxnEffects;
class TxnCoordinator;
class TxnOffsetForwarder;
}  // namespace txn
namespace security {  // SCRAM credentials and ACLs (broker/security/scram_store.h,
                      // acl_authorizer.h)
class ScramStore;
class Authorizer;
class PasswordCheck;
class TlsReloader;
}  // namespace security

class Broker {
 public:
  explicit Broker(BrokerConfig config, storage::Env* env = nullptr);
  ~Broker();

  Status start();
  // Serves until shutdown; returns after the graceful stop completed.
  void run();
  // Starts a graceful stop (any thread, idempotent).
  void shutdown();

  const BrokerConfig& config() const { return config_; }
  TopicRegistry& topics() { return *topics_; }
  PkTables& pk_tables() { return *pk_tables_; }
  // request/topic counters (broker/metrics/broker_metrics.h); exists once start() began.
  metrics::BrokerMetrics& metrics() { return *metrics_; }
  // the bound metrics.listener port (0 = disabled).
  uint16_t metrics_port() const;
  ScanSessions& scan_sessions() { return *scan_sessions_; }
  // Dynamic broker configs; effective() = config() plus durable AlterConfigs overrides.
  DynamicConfig& dynamic_config() { return *dynamic_; }
  PartitionWatchers& watchers() { return watchers_; }
  // Consumer groups and committed offsets.
  group::GroupCoordinator& groups() { return *groups_; }
  // Idempotent-producer ids.
  ProducerIdManager& producer_ids() { return *producer_ids_; }
  int32_t node_id() const { return config_.node_id; }
  bool stopping() const { return stopping_.load(); }
  const std::string& cluster_id() const;
  // The address clients are told to use (advertised.listeners, else the bound listener).
  const Listener& advertised() const { return advertised_; }
  const std::vector<Listener>& bound_listeners() const { return bound_; }

 private:
  void schedule_flush();
  Status start_schema_registry();
  void finish_shutdown();
  void drain_and_stop();
  static void run_io_thread(boost::asio::io_context& io);

  BrokerConfig config_;
  storage::Env* env_;
  // One context per I/O thread, each run by that thread alone: a connection lives on one of them
  // (Server, round robin), so its reads, handlers, long-poll wake-ups and writes stay on one
  // thread with no hand-off between threads. Declared before io_ (destroyed after it): io_'s
  // pending handlers may still hold connections whose sockets belong to these.
  std::vector<std::unique_ptr<boost::asio::io_context>> connection_ios_;
  // Broker-wide timers, signals, acceptors, journals and the shutdown poll; run by run()'s caller.
  boost::asio::io_context io_;
  using WorkGuard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;
  WorkGuard work_;
  std::vector<WorkGuard> connection_work_;
  std::unique_ptr<storage::LogManager> logs_;
  std::unique_ptr<DynamicConfig> dynamic_;
  std::unique_ptr<TopicRegistry> topics_;
  std::unique_ptr<PkTables> pk_tables_;
  std::unique_ptr<ScanSessions> scan_sessions_;  // after pk_tables_ (destroyed first)
  std::unique_ptr<group::AsioTimers> group_timers_;
  std::unique_ptr<group::LogGroupJournal> group_journal_;  // __consumer_offsets
  std::unique_ptr<group::GroupCoordinator> groups_;
  std::unique_ptr<ProducerIdManager> producer_ids_;  // Idempotent producer
  // Transactions: single node only (null in cluster mode); reset before groups_ in run().
  std::unique_ptr<txn::TxnEffects> txn_effects_;
  std::unique_ptr<group::LogGroupJournal> txn_journal_;      // __transaction_state
  std::unique_ptr<group::LogGroupJournal> schemas_journal_;  // _schemas
  std::unique_ptr<schema::SchemaRegistry> schema_registry_;
  std::unique_ptr<schema::RegistryRouter> registry_router_;      // cluster mode
  std::unique_ptr<schema::SchemaSource> schema_source_;          // what typed tables read
  std::unique_ptr<security::PasswordCheck> registry_passwords_;  // basic auth
  std::unique_ptr<schema::RegistryAddress> registry_address_;    // schema.registry.listener
  // An https:// registry's server context and (cluster) its client side for forwarding: built
  // before any port is bound, so a bad schema.registry.ssl.* key stops the start early.
  std::shared_ptr<boost::asio::ssl::context> registry_tls_;
  std::shared_ptr<boost::asio::ssl::context> registry_forward_tls_;
  std::unique_ptr<schema::RegistryServer> registry_server_;
  std::unique_ptr<txn::TxnCoordinator> txns_;
  std::unique_ptr<txn::TxnOffsetForwarder> txn_forwarder_;  // cluster mode
  std::unique_ptr<quota::ClientQuotas> quotas_;             // client quotas
  std::unique_ptr<LogTasks> log_tasks_;                     // retention + cleaner threads
  boost::asio::steady_timer producer_expiry_timer_;
  void schedule_producer_expiry();
  PartitionWatchers watchers_;
  std::unique_ptr<metrics::BrokerMetrics> metrics_;  // outlives dispatcher_ and server_
  std::unique_ptr<Services> services_;  // refers to the services above; outlives dispatcher_
  std::unique_ptr<RequestDispatcher> dispatcher_;
  // Runs the handlers that may block (HandlerDef::may_block), off the connection threads. Its
  // work uses the services (cluster_, scram_, authorizer_ ... too): run() stops and joins it
  // once the I/O threads stop, before any of them is torn down; declared after the connection
  // contexts (it holds connections).
  std::unique_ptr<boost::asio::thread_pool> blocking_pool_;
  std::unique_ptr<Server> server_;
  boost::asio::signal_set signals_;
  boost::asio::steady_timer flush_timer_;
  boost::asio::steady_timer shutdown_timer_;
  std::vector<Listener> bound_;
  Listener advertised_;
  std::unique_ptr<security::SaslAuthenticator> sasl_;
  std::unique_ptr<security::TlsReloader> tls_reloader_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> shutdown_requested_{false};
  int shutdown_polls_ = 0;
  std::unique_ptr<cluster::ClusterNode> cluster_;  // cluster mode only
  std::unique_ptr<security::ScramStore> scram_;    // after cluster_ (its etcd): destroyed first
  // ACLs (null = authorizer.class.name empty); after cluster_: its etcd watch goes first.
  std::unique_ptr<security::Authorizer> authorizer_;
  std::thread shutdown_thread_;  // cluster mode: the leadership hand-off
  std::unique_ptr<metrics::MetricsExporter> metrics_exporter_;  // last = destroyed first
};

}  // namespace strata::broker
