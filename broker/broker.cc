#include "broker/broker.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <csignal>

#include "broker/cluster/cluster_node.h"
#include "broker/cluster/producer_id_blocks.h"
#include "broker/config/security_config.h"
#include "broker/dispatch.h"
#include "broker/group/group_coordinator.h"
#include "broker/group/legacy_group_store.h"
#include "broker/group/log_group_journal.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/metrics/exporter.h"
#include "broker/net/server.h"
#include "broker/pk/pk_tables.h"
#include "broker/pk/scan_sessions.h"
#include "broker/quota/client_quotas.h"
#include "broker/schema/registry_access.h"
#include "broker/schema/registry_cluster.h"
#include "broker/schema/registry_http.h"
#include "broker/schema/schema_registry.h"
#include "broker/security/acl_authorizer.h"
#include "broker/security/password_check.h"
#include "broker/security/sasl_authenticator.h"
#include "broker/security/scram_admin.h"
#include "broker/security/scram_store.h"
#include "broker/security/tls_context.h"
#include "broker/security/tls_reload.h"
#include "broker/services.h"
#include "broker/topics/log_tasks.h"
#include "broker/txn/producer_ids.h"
#include "broker/txn/txn_coordinator.h"
#include "broker/txn/txn_effects.h"
#include "broker/txn/txn_forwarder.h"
#include "protocol/base/base64.h"
#include "protocol/sasl/scram.h"
#include "storage/env.h"
#include "storage/log_manager.h"

namespace strata::broker {

namespace {

// Each bound listener's advertised address: its advertised.listeners entry (same name) when there
// is one, else the bound address; port 0 means the bound port, an empty or wildcard host the
// loopback address.
std::vector<Listener> advertised_listeners(const BrokerConfig& config,
                                           const std::vector<Listener>& bound) {
  std::vector<Listener> out;
  for (const auto& b : bound) {
    Listener a = b;
    for (const auto& l : config.advertised_listeners) {
      if (l.name == b.name) a = l;
    }
    if (a.port == 0) a.port = b.port;
    if (a.host.empty() || a.host == "0.0.0.0") a.host = "127.0.0.1";
    out.push_back(a);
  }
  return out;
}

}  // namespace

namespace asio = boost::asio;

// How long a clean shutdown in cluster mode waits for its leaderships to move (the controller
// acts within a view change, so this is only reached when etcd or the other brokers are slow).
constexpr int64_t kLeadershipHandOffMs = 5000;

group::LogGroupJournal* Services::internal_topic_journal(std::string_view topic) const {
  if (topic == kConsumerOffsetsTopic) return offsets_topic;
  if (topic == kTransactionStateTopic) return txn_state_topic;
  return nullptr;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {
// Threads for handlers that may block (admin requests waiting on etcd, small fsynced files):
// Kafka's request-handler pool has 8; ours only takes those few request kinds.
constexpr int kBlockingHandlerThreads = 4;

std::vector<std::unique_ptr<asio::io_context>> make_connection_ios(int32_t num_io_threads) {
  const unsigned n = num_io_threads > 0 ? static_cast<unsigned>(num_io_threads)
                                        : std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::unique_ptr<asio::io_context>> v;
  // Concurrency hint 1: one thread runs each, so Asio may skip its cross-thread hand-offs.
  for (unsigned i = 0; i < n; ++i) v.push_back(std::make_unique<asio::io_context>(1));
  return v;
}
}  // namespace

Broker::Broker(BrokerConfig config, storage::Env* env)
    : config_(std::move(config)),
      env_(env ? env : storage::default_env()),
      connection_ios_(make_connection_ios(config_.num_io_threads)),
      io_(1),
      work_(asio::make_work_guard(io_)),
      producer_expiry_timer_(io_),
      signals_(io_, SIGINT, SIGTERM),
      flush_timer_(io_),
      shutdown_timer_(io_) {
  for (auto& c : connection_ios_) connection_work_.push_back(asio::make_work_guard(*c));
}

Broker::~Broker() {
  // The registry's threads reach the cluster node, the journal and the PK tables: they stop
  // first, also when start() failed after binding the registry (members go in reverse order).
  registry_server_.reset();
  if (pk_tables_) pk_tables_->registry_handle()->source.store(nullptr);
}

const std::string& Broker::cluster_id() const {
  return cluster_ ? cluster_->cluster_id() : logs_->cluster_id();
}

uint16_t Broker::metrics_port() const { return metrics_exporter_ ? metrics_exporter_->port() : 0; }

Status Broker::start() {
  // A write to a socket the peer closed (sendfile(2) of Fetch data, which takes no MSG_NOSIGNAL)
  // raises SIGPIPE, whose default action kills the process. Every socket error is handled where
  // the write returns EPIPE, so the signal is ignored process-wide (as the JVM does for Kafka).
  std::signal(SIGPIPE, SIG_IGN);
  {  // counters exist before anything can count
    std::vector<int16_t> keys;
    for (const auto& h : handler_table()) keys.push_back(h.api_key);
    metrics_ = std::make_unique<metrics::BrokerMetrics>(keys);
  }
  auto dynamic = DynamicConfig::load(env_, config_);
  if (!dynamic.ok()) return dynamic.status();
  dynamic_ = std::move(dynamic.value());
  // The logs wake long-polls themselves: Fetch and ReadChangelog wait on high-watermark advances,
  // a follower's Fetch on log-end advances.
  auto listeners = std::make_shared<storage::PartitionLog::Listeners>();
  const bool cluster_mode = !config_.coordination_etcd_endpoints.empty();
  listeners->high_watermark = [this, cluster_mode](const storage::PartitionLog& log, int64_t hw) {
    // Cluster mode: a PK state applies what became committed before anyone is woken, so a
    // lookup after an acks=all acknowledgement sees the write.
    if (cluster_mode && pk_tables_) pk_tables_->on_high_watermark(log, hw);
    watchers_.notify(&log);
  };
  // A leader's high watermark follows its own durable end and the followers' positions; a
  // follower's fetch long-polls on the log end.
  listeners->log_end = [this](const storage::PartitionLog& log, int64_t end) {
    if (cluster_) cluster_->on_log_end(log, end);
    watchers_.notify_log_end(&log);
  };
  auto logs = storage::LogManager::open(
      env_, config_.log_dirs, config_.node_id,
      [this, cluster_mode](const storage::TopicMeta& meta) {
        storage::LogConfig c = resolve_topic_config(meta.configs, *dynamic_->effective()).log;
        c.replicated = cluster_mode;
        return c;
      },
      std::move(listeners), config_.num_recovery_threads_per_data_dir);
  if (!logs.ok()) return logs.status();
  logs_ = std::move(logs.value());
  logs_->start_write_back(static_cast<uint64_t>(config_.log_segment_write_back_bytes));
  topics_ = std::make_unique<TopicRegistry>(*logs_, *dynamic_->effective());
  STRATA_RETURN_IF_ERROR(topics_->load());
  // primary-key table states, recovered by log replay before serving.
  pkindex::PkEnvironment::Options pk_memory;
  pk_memory.block_cache_bytes = static_cast<size_t>(config_.pk_block_cache_bytes);
  pk_memory.write_buffer_bytes = static_cast<size_t>(config_.pk_write_buffer_bytes);
  pk_memory.row_cache_bytes = static_cast<size_t>(config_.pk_row_cache_bytes);
  pk_tables_ = std::make_unique<PkTables>(*topics_, cluster_mode, pk_memory);
  if (cluster_mode) {  // a new replica past its log start gets the leader's checkpoint
    pk_tables_->set_behind_log_start([this](const std::string& topic, int32_t partition) {
      if (cluster_) cluster_->copy_pk_checkpoint(topic, partition);
    });
  }
  topics_->set_pk_open_files_per_partition(
      pk_tables_->environment().options().max_open_files_per_partition);
  pk_tables_->start_tasks({config_.pk_checkpoint_retained,  // checkpoints
                           config_.test_fault_pk_compact_before_checkpoint != 0,
                           config_.pk_memtable_idle_flush_ms});
  STRATA_RETURN_IF_ERROR(pk_tables_->open_all());
  scan_sessions_ = std::make_unique<ScanSessions>(  // open Scans
      io_, config_.pk_scan_session_timeout_ms, static_cast<size_t>(config_.pk_scan_max_sessions));
  scan_sessions_->start();
  if (cluster_mode) {  // etcd: reachable before anything is served
    cluster::ClusterOptions co;
    co.node_id = config_.node_id;
    co.rack = config_.broker_rack;
    co.endpoints = config_.coordination_etcd_endpoints;
    co.prefix = config_.coordination_etcd_prefix;
    co.lease_ttl_seconds = config_.coordination_lease_ttl_seconds;
    co.default_replication_factor = config_.default_replication_factor;
    co.min_insync_replicas = config_.min_insync_replicas;
    co.replica_lag_time_max_ms = config_.replica_lag_time_max_ms;
    co.replica_fetch_max_bytes = config_.replica_fetch_max_bytes;
    co.replica_fetch_wait_max_ms = config_.replica_fetch_wait_max_ms;
    co.replica_fetch_backoff_ms = config_.replica_fetch_backoff_ms;
    co.unclean_leader_election = config_.unclean_leader_election_enable;
    co.follower_throttled_rate = [this] {
      return dynamic_->effective()->follower_replication_throttled_rate;
    };
    auto ib = inter_broker_client_security(config_);
    if (!ib.ok()) return ib.status();
    co.inter_broker_security = std::move(*ib);
    cluster::LocalTopicHooks hooks;
    hooks.before_delete = [this](const TopicEntry& t) { pk_tables_->drop(t); };
    hooks.after_delete = [this](const std::string& name) { groups_->on_topic_deleted(name); };
    hooks.on_role = [this](const std::string& topic, int32_t partition, bool leader) {
      if (topic == group::kOffsetsTopic) {
        if (leader) {
          groups_->own_partition(partition);
        } else {
          groups_->release_partition(partition);
        }
        return;
      }
      if (topic == kTransactionStateTopic) {
        if (!txns_) return;
        if (!leader) return txns_->release_partition(partition);
        auto s = cluster_->snapshot();  // the coordinator epoch: the partition's leader epoch
        const auto* p = s->partition(topic, partition);
        txns_->own_partition(partition, p ? p->state.leader_epoch : 0);
        return;
      }
      pk_tables_->on_role(topic, partition, leader);
    };
    hooks.reopen_pk = [this](const std::string& topic, int32_t partition) {
      return pk_tables_->retry_open(topic, partition);
    };
    cluster_ = std::make_unique<cluster::ClusterNode>(std::move(co), *topics_, std::move(hooks));
    STRATA_RETURN_IF_ERROR(cluster_->connect(logs_->cluster_id()));
  }
  {  // consumer groups, durable in __consumer_offsets (group/log_group_journal.h)
    group::CoordinatorConfig gc;
    gc.initial_rebalance_delay_ms = config_.group_initial_rebalance_delay_ms;
    gc.min_session_timeout_ms = config_.group_min_session_timeout_ms;
    gc.max_session_timeout_ms = config_.group_max_session_timeout_ms;
    gc.offset_metadata_max_bytes = config_.offset_metadata_max_bytes;
    gc.offsets_retention_ms = int64_t{config_.offsets_retention_minutes} * 60 * 1000;
    gc.retention_check_interval_ms = config_.offsets_retention_check_interval_ms;
    group::OffsetsTopicOptions oo;
    oo.partitions = config_.offsets_topic_num_partitions;
    oo.replication_factor = config_.offsets_topic_replication_factor;
    oo.segment_bytes = config_.offsets_topic_segment_bytes;
    oo.commit_timeout_ms = config_.offsets_commit_timeout_ms;
    group_journal_ =
        std::make_unique<group::LogGroupJournal>(oo, *topics_, watchers_, io_, cluster_.get());
    group_timers_ = std::make_unique<group::AsioTimers>(io_);
    groups_ = std::make_unique<group::GroupCoordinator>(gc, *group_timers_, group_journal_.get());
    STRATA_RETURN_IF_ERROR(groups_->start());
    if (!cluster_) {  // a single node leads every partition: load them before serving
      STRATA_RETURN_IF_ERROR(group::migrate_legacy_group_store(
          config_.log_dirs.front() + "/__strata_groups", *group_journal_));
      STRATA_RETURN_IF_ERROR(groups_->own_all_now());
    }  // a cluster's partitions are owned as this broker comes to lead them (on_role)
  }
  if (cluster_) {  // producer ids: blocks reserved in etcd, unique across the cluster
    producer_ids_ =
        std::make_unique<ProducerIdManager>(std::make_unique<cluster::EtcdProducerIdBlocks>(
                                                cluster_->coordination(), cluster_->layout()),
                                            ProducerIdManager::kDefaultBlockSize);
  } else {  // idempotent-producer ids, blocks persisted in <first log dir>/__strata_producer_ids
    auto ids = ProducerIdManager::open(env_, config_.log_dirs.front());
    if (!ids.ok()) return ids.status();
    producer_ids_ = std::move(ids.value());
  }

  {  // client quotas, durable in <first log dir>/client-quotas
    auto store = quota::QuotaStore::open(env_, config_.log_dirs.front());
    if (!store.ok()) return store.status();
    quotas_ = std::make_unique<quota::ClientQuotas>(
        std::move(store.value()),
        quota::RateConfig{config_.quota_window_num,
                          int64_t{config_.quota_window_size_seconds} * 1000});
  }

  {  // SCRAM credentials: <first log dir>/scram-credentials, or etcd in a cluster
    auto store = cluster_ ? security::ScramStore::open_cluster(cluster_->coordination(),
                                                               cluster_->layout().prefix())
                          : security::ScramStore::open_file(env_, config_.log_dirs.front());
    if (!store.ok()) return store.status();
    scram_ = std::move(store.value());
    auto bootstrap = security::parse_bootstrap_users(config_.sasl_scram_bootstrap_users);
    if (!bootstrap.ok()) return bootstrap.status();
    STRATA_RETURN_IF_ERROR(security::apply_bootstrap_users(*scram_, *bootstrap));
  }
  if (!config_.authorizer_class_name.empty()) {  // ACLs: a file here, etcd in a cluster
    security::AuthorizerConfig ac{config_.super_users, config_.allow_everyone_if_no_acl_found};
    if (cluster_) {
      auto a = security::ClusterAclAuthorizer::open(cluster_->coordination(),
                                                    config_.coordination_etcd_prefix, ac);
      if (!a.ok()) return a.status();
      authorizer_ = std::move(a.value());
    } else {
      auto a = security::FileAclAuthorizer::open(env_, config_.log_dirs.front(), ac);
      if (!a.ok()) return a.status();
      authorizer_ = std::move(a.value());
    }
    spdlog::info("authorizer {}: {} ACLs, {} super users, allow.everyone.if.no.acl.found={}",
                 config_.authorizer_class_name, authorizer_->acls(security::AclFilter{}).size(),
                 config_.super_users.size(), config_.allow_everyone_if_no_acl_found);
  }

  services_ =
      std::make_unique<Services>(Services{config_,
                                          *dynamic_,
                                          *topics_,
                                          *pk_tables_,
                                          *scan_sessions_,
                                          watchers_,
                                          *groups_,
                                          *producer_ids_,
                                          *quotas_,
                                          *metrics_,
                                          stopping_,
                                          config_.node_id,
                                          cluster_ ? cluster_->cluster_id() : logs_->cluster_id(),
                                          {},
                                          {},
                                          cluster_.get()});
  services_->offsets_topic = group_journal_.get();
  {  // the transaction coordinator, durable in __transaction_state (txn/txn_coordinator.h)
    group::OffsetsTopicOptions to;
    to.name = kTransactionStateTopic;
    to.partitions = config_.transaction_state_log_num_partitions;
    to.replication_factor = config_.transaction_state_log_replication_factor;
    to.min_insync_replicas = config_.transaction_state_log_min_isr;
    to.segment_bytes = config_.transaction_state_log_segment_bytes;
    to.commit_timeout_ms = config_.offsets_commit_timeout_ms;
    txn_journal_ =
        std::make_unique<group::LogGroupJournal>(to, *topics_, watchers_, io_, cluster_.get());
    client::ClientSecurity markers_security;
    if (cluster_) markers_security = cluster_->options().inter_broker_security;
    txn_effects_ = std::make_unique<txn::BrokerTxnEffects>(
        *topics_, *pk_tables_, *groups_, *producer_ids_, cluster_.get(), markers_security);
    txns_ = std::make_unique<txn::TxnCoordinator>(
        txn::TxnLimits{config_.transaction_max_timeout_ms}, *txn_effects_,
        config_.transactional_id_expiration_ms, txn_journal_.get(),
        txn::TxnClusterMode{cluster_ != nullptr});
  }
  if (!cluster_) {  // a single node coordinates every id: load them all before serving
    auto loaded = txns_->load(now_ms());
    if (!loaded.ok()) return loaded.status();
    if (loaded->ids > 0) {
      spdlog::info(
          "transaction coordinator loaded {} transactional id(s): {} ongoing, {} finished now{}",
          loaded->ids, loaded->ongoing, loaded->completed,
          loaded->skipped ? fmt::format(", {} unreadable record(s) skipped", loaded->skipped)
                          : std::string());
    }
    if (size_t n =
            txn::abort_orphaned_transactions(*topics_, *pk_tables_, txns_->open_transactions())) {
      spdlog::warn("aborted {} transaction(s) no coordinator state owns", n);
    }
  }                // a cluster's partitions are owned as this broker comes to lead them (on_role)
  if (cluster_) {  // TxnOffsetCommit reaches the group's coordinator: forwarded to the txn's
    txn_forwarder_ = std::make_unique<txn::TxnOffsetForwarder>(
        *cluster_, *txns_, cluster_->options().inter_broker_security);
    services_->txn_forwarder = txn_forwarder_.get();
  }
  txns_->start(config_.transaction_abort_timed_out_transaction_cleanup_interval_ms);
  services_->txns = txns_.get();
  services_->txn_state_topic = txn_journal_.get();
  services_->credentials = scram_.get();
  services_->scram = scram_.get();
  {
    auto sasl = security::SaslAuthenticator::create(config_, services_->credentials);
    if (!sasl.ok()) return sasl.status();
    sasl_ = std::move(sasl.value());
    services_->sasl = sasl_.get();
  }
  services_->authorizer = authorizer_.get();
  blocking_pool_ = std::make_unique<asio::thread_pool>(kBlockingHandlerThreads);
  dispatcher_ = std::make_unique<RequestDispatcher>(*services_, blocking_pool_.get());
  Server::Options so;
  so.limits.max_request_bytes = config_.socket_request_max_bytes;
  so.limits.idle_ms = config_.connections_max_idle_ms;
  so.limits.request_read_timeout_ms = config_.socket_request_read_timeout_ms;
  so.limits.max_queued_response_bytes = config_.connection_max_queued_response_bytes;
  so.limits.pool = std::make_shared<RequestMemoryPool>(config_.queued_max_request_bytes);
  metrics_->set_request_pool(so.limits.pool);
  so.limits.max_unauthenticated_bytes = config_.sasl_server_max_receive_size;
  so.max_connections = config_.max_connections;
  so.max_connections_per_ip = config_.max_connections_per_ip;
  std::vector<asio::io_context*> connection_ios;
  for (auto& c : connection_ios_) connection_ios.push_back(c.get());
  server_ = std::make_unique<Server>(io_, std::move(connection_ios), *dispatcher_, std::move(so));
  std::vector<std::shared_ptr<const ListenerSecurity>> security;
  tls_reloader_ = std::make_unique<security::TlsReloader>();
  for (const auto& l : config_.listeners) {
    // The effective config: a key store set by AlterConfigs outlives a restart.
    auto s = security::listener_security(*dynamic_->effective(), l);
    if (!s.ok()) return s.status();
    if (s->tls) tls_reloader_->add(l.name, s->tls);
    security.push_back(std::make_shared<const ListenerSecurity>(std::move(*s)));
  }
  services_->tls_reloader = tls_reloader_.get();
  // The metrics endpoint's TLS context too, so that a bad metrics.ssl.* key stops the start
  // before any port is bound or the cluster is joined.
  metrics::MetricsSecurity metrics_security;
  if (!config_.metrics_listener.empty()) {
    auto ms = metrics::metrics_security(config_);
    if (!ms.ok()) return ms.status();
    metrics_security = std::move(*ms);
  }
  if (!config_.schema_registry_listener.empty()) {  // the registry's, likewise
    auto addr = schema::parse_registry_listener(config_.schema_registry_listener);
    if (!addr.ok()) return addr.status();
    registry_address_ = std::make_unique<schema::RegistryAddress>(*addr);
    if (addr->https) {
      auto tls =
          security::make_prefixed_tls_context(config_, "schema.registry.", "schema registry");
      if (!tls.ok()) return tls.status();
      registry_tls_ = *tls;
      if (cluster_) {
        auto client = security::make_prefixed_client_tls_context(config_, "schema.registry.",
                                                                 "schema registry");
        if (!client.ok()) return client.status();
        registry_forward_tls_ = *client;
      }
    } else if (auto it = config_.values.find("schema.registry.ssl.keystore.location");
               it != config_.values.end() && !it->second.empty()) {
      spdlog::warn(
          "schema.registry.ssl.* keys are set but schema.registry.listener is {}: "
          "they apply to an https:// listener only",
          config_.schema_registry_listener);
    }
  }
  STRATA_RETURN_IF_ERROR(server_->listen(config_.listeners, std::move(security)));
  bound_ = server_->bound();
  services_->advertised_listeners = advertised_listeners(config_, bound_);
  advertised_ = services_->advertised_for(inter_broker_listener(config_));
  services_->advertised = advertised_;  // before the first accept
  // Bound before the cluster is joined: the registration carries its address (the writer's is
  // where other brokers forward registry requests).
  STRATA_RETURN_IF_ERROR(start_schema_registry());
  if (cluster_) {  // roles in place before the first request is read
    std::map<std::string, std::string> endpoints;
    for (const auto& l : services_->advertised_listeners) {
      endpoints[l.name] = l.host + ":" + std::to_string(l.port);
    }
    if (registry_server_) {
      const std::string& h = registry_server_->host();
      endpoints[schema::kRegistryEndpoint] = (h == "0.0.0.0" || h == "::" ? advertised_.host : h) +
                                             ":" + std::to_string(registry_server_->port());
    }
    STRATA_RETURN_IF_ERROR(
        cluster_->start(advertised_.host, advertised_.port, std::move(endpoints)));
  }
  server_->start();
  signals_.async_wait([this](boost::system::error_code ec, int sig) {
    if (!ec) {
      spdlog::info("signal {} received: shutting down", sig);
      shutdown();
    }
  });
  schedule_flush();
  schedule_producer_expiry();
  log_tasks_ = std::make_unique<LogTasks>(*services_);  // own threads, never the I/O ones
  log_tasks_->start();
  if (!config_.metrics_listener.empty()) {  // Prometheus /metrics (docs/operations.md)
    auto addr = metrics::parse_metrics_listener(config_.metrics_listener);
    if (!addr.ok()) return addr.status();
    if (!metrics_security.tls && !metrics_security.basic_auth_user.empty()) {
      spdlog::warn(
          "metrics.basic.auth.user is set without metrics.ssl.enabled: scrapers send "
          "the password in clear text");
    }
    auto exporter = metrics::MetricsExporter::start(*services_, *addr, std::move(metrics_security));
    if (!exporter.ok()) return exporter.status();
    metrics_exporter_ = std::move(exporter.value());
    spdlog::info("metrics listening on {}{}", metrics_exporter_->url(),
                 config_.metrics_basic_auth_user.empty() ? "" : " (basic auth)");
  }
  for (const auto& b : bound_) {
    spdlog::info("listening on {}://{}:{} ({}; cluster {}, node {}, {} topics)", b.name, b.host,
                 b.port, security_protocol_name(b.protocol), cluster_id(), config_.node_id,
                 topics_->list().size());
  }
  return Status::Ok();
}

// The embedded Schema Registry (docs/schema-registry.md): its state is the replay of `_schemas`
// (one partition, compacted, fsynced per write on a single node), loaded before it serves. In a
// cluster the topic is replicated and its leader is the one writer (registry_cluster.h).
Status Broker::start_schema_registry() {
  if (!registry_address_) {  // no listener (parsed in start()): confluent values never decode
    pk_tables_->registry_handle()->none.store(true);
    return Status::Ok();
  }
  const schema::RegistryAddress* addr = registry_address_.get();
  group::OffsetsTopicOptions so;
  so.name = schema::kSchemasTopic;
  so.partitions = 1;
  so.replication_factor = config_.schema_registry_topic_replication_factor;
  so.commit_timeout_ms = config_.offsets_commit_timeout_ms;
  schemas_journal_ =
      std::make_unique<group::LogGroupJournal>(so, *topics_, watchers_, io_, cluster_.get());
  schema_registry_ = std::make_unique<schema::SchemaRegistry>(*schemas_journal_);
  // docs/schema-registry.md, "Security": TLS, basic auth of the broker's SCRAM users, the ACLs
  // of each subject's topic.
  schema::RegistrySecurity security;
  security.tls = registry_tls_;  // built in start(), before any port was bound
  std::shared_ptr<boost::asio::ssl::context> forward_tls = registry_forward_tls_;
  const bool basic = config_.schema_registry_authentication_method == "basic";
  std::string inter_broker_authorization;
  std::string broker_principal;  // reads every subject (typed tables' decoding)
  std::string forward_key;       // vouches for forwarded clients' addresses (registry_access.h)
  if (cluster_ && cluster_->options().inter_broker_security.sasl()) {
    forward_key = schema::forward_key(cluster_->options().inter_broker_security.password);
  }
  if (basic) {
    registry_passwords_ = std::make_unique<security::PasswordCheck>(services_->credentials);
    security.authenticate = [p = registry_passwords_.get()](const std::string& user,
                                                            const std::string& password) {
      return p->matches(user, password);
    };
    security.authenticate_at_hand = [p = registry_passwords_.get()](const std::string& user,
                                                                    const std::string& password) {
      return p->remembered(user, password);
    };
    if (!addr->https) {
      spdlog::warn(
          "schema.registry.authentication.method=basic on an http:// schema.registry.listener: "
          "clients send their passwords in clear text");
    }
    if (cluster_) {
      // A broker's own schema reads (typed tables) reach the writer as the inter-broker user.
      const auto& ib = cluster_->options().inter_broker_security;
      if (!ib.sasl() || ib.username.empty()) {
        return Status(Errc::invalid_argument,
                      "schema.registry.authentication.method=basic in a cluster needs a SASL "
                      "inter-broker listener: brokers read schemas from the registry's writer as "
                      "the inter-broker user");
      }
      // Basic auth checks SCRAM credentials: a user only the JAAS config knows (PLAIN) would be
      // refused by every writer.
      const bool scram =
          services_->credentials != nullptr &&
          (services_->credentials->scram(protocol::sasl::ScramMechanism::sha512, ib.username) ||
           services_->credentials->scram(protocol::sasl::ScramMechanism::sha256, ib.username));
      if (!scram) {
        return Status(Errc::invalid_argument,
                      "schema.registry.authentication.method=basic: the inter-broker user '" +
                          ib.username +
                          "' has no SCRAM credential, so the registry's writer would refuse this "
                          "broker's schema reads (create it, e.g. in sasl.scram.bootstrap.users)");
      }
      inter_broker_authorization = "Basic " + base64_encode(ib.username + ":" + ib.password);
      broker_principal = "User:" + ib.username;
    }
  }
  if (cluster_) {
    registry_router_ = std::make_unique<schema::RegistryRouter>(
        *schema_registry_, *schemas_journal_, *cluster_, config_.node_id, 10000,
        std::move(forward_tls), forward_key);
    auto server = schema::RegistryServer::start(
        *addr,
        schema::authorized_registry(
            [r = registry_router_.get()](const HttpRequest& req) { return r->handle(req); },
            authorizer_.get(), forward_key, broker_principal),
        std::move(security), schema::RegistryWaits::every_request);
    if (!server.ok()) return server.status();
    registry_server_ = std::move(server.value());
    schema_source_ =
        schema::forwarded_schema_source(*registry_router_, std::move(inter_broker_authorization));
    pk_tables_->registry_handle()->source.store(schema_source_.get());  // confluent tables
    spdlog::info("schema registry serving {} (cluster: the leader of {} writes)",
                 registry_server_->url(), schema::kSchemasTopic);
    return Status::Ok();
  }
  STRATA_RETURN_IF_ERROR(schema_registry_->load());
  if (schema_registry_->skipped_records() > 0) {
    spdlog::warn("schema registry: skipped {} unreadable record(s) of {}",
                 schema_registry_->skipped_records(), schema::kSchemasTopic);
  }
  auto server =
      schema::RegistryServer::start(*addr,
                                    schema::authorized_registry(
                                        [r = schema_registry_.get()](const HttpRequest& req) {
                                          return schema::handle_registry_request(*r, req);
                                        },
                                        authorizer_.get()),
                                    std::move(security));
  if (!server.ok()) return server.status();
  registry_server_ = std::move(server.value());
  schema_source_ = schema::local_schema_source(*schema_registry_);
  pk_tables_->registry_handle()->source.store(schema_source_.get());  // confluent tables
  spdlog::info("schema registry serving {}{} ({} subjects)", registry_server_->url(),
               basic ? " (basic auth)" : "", schema_registry_->subjects(false).size());
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

// drops idempotent-producer state idle for producer.id.expiration.ms, every
// producer.id.expiration.check.interval.ms (Kafka's names and defaults).
void Broker::schedule_producer_expiry() {
  producer_expiry_timer_.expires_after(
      std::chrono::milliseconds(config_.producer_id_expiration_check_interval_ms));
  producer_expiry_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopping_) return;
    const int64_t now = now_ms();
    size_t expired = 0;
    for (const auto& topic : topics_->list()) {
      for (const auto& log : topic->partitions) {
        expired += log->expire_producers(now, config_.producer_id_expiration_ms);
      }
    }
    if (expired > 0) spdlog::info("expired {} idle producer id(s)", expired);
    schedule_producer_expiry();
  });
}

void Broker::run() {
  std::vector<std::thread> threads;
  for (auto& c : connection_ios_) threads.emplace_back([&ctx = *c] { run_io_thread(ctx); });
  run_io_thread(io_);
  for (auto& t : threads) t.join();
  // Handlers not yet started there are dropped, as frames not yet dispatched are; one already
  // running finishes (its answer goes nowhere: the contexts stopped).
  if (blocking_pool_) {
    blocking_pool_->stop();
    blocking_pool_->join();
  }
  if (shutdown_thread_.joinable()) shutdown_thread_.join();
  // No request may write `_schemas` past this; and its requests check passwords and ACLs
  // (the stores below).
  registry_server_.reset();
  if (scram_) scram_->stop();       // its watch, before etcd goes
  services_->authorizer = nullptr;  // nothing serves any more; its etcd watch ends before etcd's
  authorizer_.reset();
  if (cluster_) cluster_->stop();  // fetchers stop writing, the lease goes: before logs close
  metrics_exporter_.reset();       // no scrape may read the services closed below
  pk_tables_->registry_handle()->source.store(nullptr);  // the registry goes before the tables
  if (schemas_journal_) schemas_journal_->stop();
  if (group_journal_) group_journal_->stop();  // no partition load runs past this
  if (txn_journal_) txn_journal_->stop();
  if (txn_forwarder_) txn_forwarder_->stop();
  txns_.reset();  // its sweep thread stops; it commits offsets through groups_
  txn_effects_.reset();
  txn_journal_.reset();
  groups_.reset();
  if (log_tasks_) log_tasks_->stop();           // before the logs close
  if (scan_sessions_) scan_sessions_->clear();  // release Scan snapshots
  if (pk_tables_) {  // flush PK states (log fsynced first) before the logs close
    Status pst = pk_tables_->close_all();
    if (!pst.ok()) spdlog::error("closing primary-key tables: {}", pst.to_string());
  }
  Status st = logs_->close_all();
  if (!st.ok()) spdlog::error("closing logs: {}", st.to_string());
  spdlog::info("shut down cleanly");
}

// The one place where an exception escaping a posted handler or a timer lands: it is logged and
// the thread goes back to serving (the failing operation is lost, the broker is not). Handlers
// already catch per request; this catches what runs outside a request (timers, completions).
void Broker::run_io_thread(asio::io_context& io) {
  for (;;) {
    try {
      io.run();
      return;
    } catch (const std::exception& e) {
      spdlog::error("unhandled exception on an I/O thread (the broker keeps serving): {}",
                    e.what());
    } catch (...) {
      spdlog::error("unhandled non-standard exception on an I/O thread (the broker keeps serving)");
    }
  }
}

void Broker::shutdown() {
  if (shutdown_requested_.exchange(true)) return;
  if (cluster_) {
    // A clean shutdown first hands its leaderships to other in-sync replicas (the controller
    // moves them once the broker says it is leaving), serving meanwhile; off the I/O threads.
    shutdown_thread_ = std::thread([this] {
      cluster_->begin_shutdown(kLeadershipHandOffMs);
      drain_and_stop();
    });
    return;
  }
  drain_and_stop();
}

void Broker::drain_and_stop() {
  stopping_ = true;
  asio::post(io_, [this] {
    boost::system::error_code ec;
    signals_.cancel(ec);
    flush_timer_.cancel();
    producer_expiry_timer_.cancel();
    if (scan_sessions_) scan_sessions_->stop();
    server_->drain();
    if (groups_) groups_->shutdown();  // waiting JoinGroup/SyncGroup answer now
    watchers_.wake_all();              // long-polling fetches answer now
    finish_shutdown();
  });
}

// Waits (up to ~10 s) for connections to answer what they accepted, then stops the I/O threads.
void Broker::finish_shutdown() {
  if (server_->open_connections() == 0 || ++shutdown_polls_ > 200) {
    work_.reset();
    io_.stop();
    connection_work_.clear();
    for (auto& c : connection_ios_) c->stop();
    return;
  }
  watchers_.wake_all();
  shutdown_timer_.expires_after(std::chrono::milliseconds(50));
  shutdown_timer_.async_wait([this](boost::system::error_code) { finish_shutdown(); });
}

}  // namespace strata::broker
