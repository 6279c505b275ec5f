#include "broker/cluster/cluster_node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "broker/cluster/checkpoint_copier.h"
#include "broker/cluster/controller.h"
#include "broker/cluster/etcd_client.h"
#include "broker/cluster/membership.h"
#include "broker/cluster/replica_manager.h"
#include "broker/cluster/replication_throttle.h"
#include "broker/topics/topic_registry.h"

namespace strata::broker::cluster {

ClusterNode::ClusterNode(ClusterOptions options, TopicRegistry& topics, LocalTopicHooks hooks)
    : options_(std::move(options)),
      layout_(options_.prefix),
      topics_(topics),
      hooks_(std::move(hooks)) {}

ClusterNode::~ClusterNode() { stop(); }

Status ClusterNode::connect(const std::string& local_cluster_id) {
  std::lock_guard lk(lifecycle_mu_);
  if (etcd_) return Status(Errc::invalid_argument, "cluster node already connected");
  EtcdOptions eo;
  for (const auto& e : options_.endpoints) {
    auto ep = parse_etcd_endpoint(e);
    if (!ep.ok()) return ep.status();
    eo.endpoints.push_back(*ep);
  }
  if (eo.endpoints.empty()) return Status(Errc::invalid_argument, "no etcd endpoint configured");
  etcd_ = std::make_unique<EtcdClient>(eo);
  // The cluster id: the first broker's, kept under {prefix}/cluster_id.
  const std::string key = layout_.prefix() + "/cluster_id";
  auto r =
      etcd_->txn({Compare::absent(key)}, {TxnOp::put(key, local_cluster_id)}, {TxnOp::get(key)});
  if (!r.ok()) {
    return Status(r.status().code(),
                  "reaching etcd (" + options_.endpoints.front() + "): " + r.status().message());
  }
  cluster_id_ = local_cluster_id;
  if (!r->succeeded && !r->ranges.empty() && !r->ranges.front().kvs.empty()) {
    cluster_id_ = r->ranges.front().kvs.front().value;
  }
  return Status::Ok();
}

Status ClusterNode::start(const std::string& host, int32_t port,
                          std::map<std::string, std::string> endpoints) {
  std::lock_guard lk(lifecycle_mu_);
  if (!etcd_) return Status(Errc::invalid_argument, "cluster node not connected");
  if (started_) return Status(Errc::invalid_argument, "cluster node already started");
  started_ = true;
  view_ = std::make_unique<MetadataView>(*etcd_, layout_);

  ReplicaManager::Options ro;
  ro.self = options_.node_id;
  ro.replica_lag_time_max_ms = options_.replica_lag_time_max_ms;
  ro.fetch_max_bytes = options_.replica_fetch_max_bytes;
  ro.fetch_wait_max_ms = options_.replica_fetch_wait_max_ms;
  ro.fetch_backoff_ms = options_.replica_fetch_backoff_ms;
  ro.throttle = std::make_shared<ReplicationThrottle>(options_.follower_throttled_rate);
  ro.security = options_.inter_broker_security;
  {
    CheckpointCopier::Options co;
    co.throttle = ro.throttle;
    co.security = options_.inter_broker_security;
    co.leader = [this](const std::string& topic,
                       int32_t partition) -> std::optional<std::pair<std::string, int>> {
      auto s = snapshot();
      const auto* vp = s->partition(topic, partition);
      if (!vp || vp->state.leader < 0 || vp->state.leader == options_.node_id) return std::nullopt;
      auto b = s->brokers.find(vp->state.leader);
      if (b == s->brokers.end()) return std::nullopt;
      return std::make_pair(b->second.host, b->second.port);
    };
    co.reopen = [this](const std::string& topic, int32_t partition) {
      return hooks_.reopen_pk && hooks_.reopen_pk(topic, partition);
    };
    copier_ = std::make_unique<CheckpointCopier>(topics_, std::move(co));
    ro.state_pending = [copier = copier_.get()](const std::string& topic, int32_t partition) {
      return copier->pending(topic, partition);
    };
  }
  ro.before_delete = hooks_.before_delete;
  ro.after_delete = hooks_.after_delete;
  ro.on_role = hooks_.on_role;
  replicas_ = std::make_unique<ReplicaManager>(*etcd_, layout_, topics_, std::move(ro));
  view_->subscribe(
      [this](const std::shared_ptr<const ClusterSnapshot>& s) { replicas_->on_view(s); });
  Status st = view_->start();
  if (!st.ok()) {
    return Status(st.code(), "reading the cluster state from etcd (" + options_.endpoints.front() +
                                 "...): " + st.message());
  }

  BrokerRecord self;
  self.id = options_.node_id;
  self.host = host;
  self.port = port;
  self.rack = options_.rack;
  self.endpoints = std::move(endpoints);
  Membership::Options mo;
  mo.lease_ttl_seconds = options_.lease_ttl_seconds;
  // A lost lease changes no role by itself: when all of etcd is down (the common case) nobody
  // can move anything and serving on is right; when only this broker is cut off, the controller
  // moves its leaderships, its followers fetch from the new leaders, so its high watermark stops
  // and it acknowledges no acks=all write, and it steps down when its view shows the change.
  mo.on_lost = [] {
    spdlog::warn("cluster: serving on with the current roles until the view changes");
  };
  mo.on_regained = [this] {
    // Leaderships come back only from a view as current as etcd: one that already shows what
    // the controller did while this broker was away.
    catch_up();
    spdlog::info("cluster: broker {} is registered again; applying the current view",
                 options_.node_id);
    replicas_->on_view(view_->snapshot());
  };
  membership_ = std::make_unique<Membership>(*etcd_, layout_, self, std::move(mo));
  STRATA_RETURN_IF_ERROR(membership_->join());

  Controller::Options co;
  co.unclean_leader_election = options_.unclean_leader_election;
  co.lease = [this] { return membership_->lease(); };
  controller_ = std::make_unique<Controller>(*etcd_, layout_, *view_, options_.node_id, co);
  controller_->start();
  replicas_->start(view_->snapshot());
  spdlog::info("cluster: broker {} joined (etcd {}, prefix {}, lease ttl {} s)", options_.node_id,
               options_.endpoints.front(), layout_.prefix(), options_.lease_ttl_seconds);
  return Status::Ok();
}

void ClusterNode::begin_shutdown(int64_t wait_ms) {
  std::lock_guard lk(lifecycle_mu_);
  if (!membership_ || stopped_) return;
  Status st = membership_->begin_shutdown();
  if (!st.ok()) {
    spdlog::warn("cluster: could not announce the shutdown: {}", st.to_string());
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  size_t left = replicas_->movable_leaderships();
  while (left > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = replicas_->movable_leaderships();
  }
  if (left > 0) spdlog::warn("cluster: {} leadership(s) did not move before shutdown", left);
}

void ClusterNode::stop() {
  std::lock_guard lk(lifecycle_mu_);
  if (stopped_) return;
  stopped_ = true;
  if (copier_) copier_->stop();
  if (replicas_) replicas_->stop();
  if (controller_) controller_->stop();
  if (membership_) membership_->leave();
  if (view_) view_->stop();
}

void ClusterNode::catch_up() {
  auto r = etcd_->range(layout_.prefix() + "/cluster_id");
  if (r.ok()) view_->wait_for_revision(r->revision, std::chrono::seconds(5));
}

Result<TopicRecord> ClusterNode::create_topic(const NewTopic& topic) {
  auto r = cluster::create_topic(*etcd_, layout_, *snapshot(), topic);
  if (!r.ok()) return r;
  catch_up();
  // When this broker holds a replica, its local topic (made by the replica manager from the
  // view) exists before the answer, so a DescribeConfigs or AlterConfigs sent next finds it.
  bool here = false;
  for (const auto& replicas : r->replicas) {
    for (int32_t b : replicas) here = here || b == options_.node_id;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (here && !topics_.find(topic.name) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return r;
}

Status ClusterNode::delete_topic(const std::string& name) {
  Status st = cluster::delete_topic(*etcd_, layout_, *snapshot(), name);
  if (st.ok()) catch_up();
  return st;
}

Result<TopicRecord> ClusterNode::add_partitions(const std::string& name, int32_t new_total) {
  auto r = cluster::add_partitions(*etcd_, layout_, *snapshot(), name, new_total);
  if (r.ok()) catch_up();
  return r;
}

AdminOutcome ClusterNode::reassign(const std::string& topic, int32_t partition,
                                   const std::optional<std::vector<int32_t>>& target) {
  AdminOutcome out = reassign_partition(*etcd_, layout_, *snapshot(), topic, partition, target);
  if (out.revision > 0) view_->wait_for_revision(out.revision, std::chrono::seconds(5));
  return out;
}

AdminOutcome ClusterNode::elect_leader(const std::string& topic, int32_t partition, bool unclean) {
  AdminOutcome out = unclean
                         ? elect_unclean_leader(*etcd_, layout_, *snapshot(), topic, partition)
                         : elect_preferred_leader(*etcd_, layout_, *snapshot(), topic, partition);
  if (out.revision > 0) view_->wait_for_revision(out.revision, std::chrono::seconds(5));
  return out;
}

namespace {

// The topic's record and its mod revision, read from etcd.
Result<std::pair<TopicRecord, int64_t>> read_topic_record(Coordination& etcd, const Layout& layout,
                                                          const std::string& name) {
  auto r = etcd.range(layout.topic(name));
  if (!r.ok()) return r.status();
  if (r->kvs.empty()) return Status(Errc::not_found, "Topic '" + name + "' does not exist.");
  auto t = decode_topic(r->kvs.front().value);
  if (!t.ok()) return t.status();
  return std::make_pair(std::move(*t), r->kvs.front().mod_revision);
}

}  // namespace

Result<TopicRecord> ClusterNode::read_topic(const std::string& name) {
  auto r = read_topic_record(*etcd_, layout_, name);
  if (!r.ok()) return r.status();
  return std::move(r->first);
}

Result<std::map<std::string, std::string>> ClusterNode::edit_topic_configs(const std::string& name,
                                                                           const ConfigEdit& edit,
                                                                           bool store) {
  // Two admins editing one topic at once: the loser reads the winner's record and edits that.
  constexpr int kAttempts = 5;
  const std::string key = layout_.topic(name);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto current = read_topic_record(*etcd_, layout_, name);
    if (!current.ok()) return current.status();
    auto& [record, revision] = *current;
    auto next = edit(record.configs);
    // A change that changes nothing is not written: it would only move the record's revision
    // under a concurrent DeleteTopics' compare.
    if (!next.ok() || !store || *next == record.configs) return next;
    record.configs = *next;
    auto r = etcd_->txn({Compare::mod_revision_is(key, revision)},
                        {TxnOp::put(key, encode(record))}, {});
    if (!r.ok()) return r.status();
    if (r->succeeded) {
      view_->wait_for_revision(r->revision, std::chrono::seconds(5));
      return next;
    }
  }
  return Status(Errc::unavailable, "Topic '" + name + "' kept changing meanwhile; retry.");
}

std::shared_ptr<const ClusterSnapshot> ClusterNode::snapshot() const {
  return view_ ? view_->snapshot() : std::make_shared<const ClusterSnapshot>();
}

Coordination& ClusterNode::coordination() { return *etcd_; }
MetadataView& ClusterNode::view() { return *view_; }

int32_t ClusterNode::controller_id() const {
  auto s = snapshot();
  return s->controller ? s->controller->id : -1;
}

bool ClusterNode::controller_active() const { return controller_ && controller_->active(); }

ReplicaManagerStats ClusterNode::replica_stats() const {
  return replicas_ ? replicas_->stats() : ReplicaManagerStats{};
}

protocol::ErrorCode ClusterNode::leader_check(std::string_view topic, int32_t partition,
                                              int32_t current_leader_epoch) const {
  return replicas_->leader_check(topic, partition, current_leader_epoch);
}

void ClusterNode::copy_pk_checkpoint(const std::string& topic, int32_t partition) {
  if (copier_) copier_->request(topic, partition);
}

protocol::ErrorCode ClusterNode::replica_check(std::string_view topic, int32_t partition) const {
  auto s = snapshot();
  auto t = s->topics.find(std::string(topic));
  if (t == s->topics.end() || partition < 0 ||
      partition >= static_cast<int32_t>(t->second.replicas.size())) {
    return protocol::ErrorCode::unknown_topic_or_partition;
  }
  const auto& replicas = t->second.replicas[static_cast<size_t>(partition)];
  return std::find(replicas.begin(), replicas.end(), options_.node_id) != replicas.end()
             ? protocol::ErrorCode::none
             : protocol::ErrorCode::not_leader_or_follower;
}

protocol::ErrorCode ClusterNode::min_isr_check(std::string_view topic, int32_t partition,
                                               int32_t min_isr) const {
  return replicas_->min_isr_check(topic, partition, min_isr);
}

std::vector<int32_t> ClusterNode::isr(std::string_view topic, int32_t partition) const {
  return replicas_->isr(topic, partition);
}

void ClusterNode::on_follower_fetch(std::string_view topic, int32_t partition, int32_t replica,
                                    int64_t fetch_offset, int64_t leader_log_end,
                                    bool state_pending) {
  replicas_->on_follower_fetch(topic, partition, replica, fetch_offset, leader_log_end,
                               state_pending);
}

void ClusterNode::on_log_end(const storage::PartitionLog& log, int64_t) {
  if (replicas_) replicas_->on_log_end(log);
}

}  // namespace strata::broker::cluster
