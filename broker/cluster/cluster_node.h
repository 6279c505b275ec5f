// ClusterNode: one broker's part in a Strata cluster (cluster mode = coordination.etcd.endpoints
// set). It owns the broker's etcd client, its registration (Membership), its copy of the cluster
// state (MetadataView), its Controller candidacy, and the data plane for the partitions it
// replicates:
//  - roles from the view (roles.h): a partition this broker leads gets become_leader(epoch) on its
//    local log and a LeaderState (followers' positions, high watermark over the ISR, ISR shrink
//    and expand written to etcd by compare-and-swap); a partition it follows is handed to the
//    replica fetcher of its leader; local topics are created with the cluster's topic id when a
//    topic appears in the view and deleted when it goes;
//  - what handlers ask: is this broker the leader at this epoch, is the ISR large enough for
//    acks=all, a follower's fetch position (which moves the high watermark).
// Handlers reach it through Services::cluster (null on a single node). Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/cluster/coordination.h"
#include "broker/cluster/metadata_view.h"
#include "broker/cluster/reassignment.h"
#include "broker/cluster/records.h"
#include "broker/cluster/topic_admin.h"
#include "protocol/base/result.h"
#include "protocol/client/connection.h"
#include "protocol/wire/errors.h"

namespace strata::storage {
class PartitionLog;
}

namespace strata::broker {
class TopicRegistry;
struct TopicEntry;
}  // namespace strata::broker

namespace strata::broker::cluster {

class EtcdClient;
class Membership;
class Controller;
class ReplicaManager;
class CheckpointCopier;
struct ReplicaManagerStats;

struct ClusterOptions {
  int32_t node_id = 0;
  std::string rack;                    // broker.rack ("" = none)
  std::vector<std::string> endpoints;  // coordination.etcd.endpoints
  std::string prefix = "/strata";      // coordination.etcd.prefix
  int64_t lease_ttl_seconds = 6;       // coordination.lease.ttl.seconds
  int32_t default_replication_factor = 1;
  int32_t min_insync_replicas = 1;  // broker default; topics may override
  int64_t replica_lag_time_max_ms = 30000;
  int32_t replica_fetch_max_bytes = 1048576;
  int32_t replica_fetch_wait_max_ms = 500;
  int32_t replica_fetch_backoff_ms = 1000;
  bool unclean_leader_election = false;
  // follower.replication.throttled.rate (bytes/s, -1 = unlimited), read at every fetch round so a
  // dynamic change applies at once; null = unlimited.
  std::function<int64_t()> follower_throttled_rate;
  // How this broker connects to the others (replica fetches, checkpoint copies): the
  // inter-broker listener's protocol, TLS trust and SASL credentials.
  client::ClientSecurity inter_broker_security;
};

// What deleting a topic's local data involves beyond its logs (PK states, committed offsets).
struct LocalTopicHooks {
  std::function<void(const TopicEntry&)> before_delete;
  std::function<void(const std::string&)> after_delete;
  // A partition's role here changed (leader = true): PK states follow it (ReplicaManager).
  std::function<void(const std::string& topic, int32_t partition, bool leader)> on_role;
  // A new replica's PK state was put in place from the leader's checkpoint: reopen it (true once
  // it is open).
  std::function<bool(const std::string& topic, int32_t partition)> reopen_pk;
};

class ClusterNode {
 public:
  // `topics` outlives the node.
  ClusterNode(ClusterOptions options, TopicRegistry& topics, LocalTopicHooks hooks = {});
  ~ClusterNode();

  // Connects to etcd and settles the cluster id: `local_cluster_id` (this broker's
  // meta.properties) becomes the cluster's when this is its first broker. Fails when etcd cannot
  // be reached. coordination() is usable afterwards (producer id blocks).
  Status connect(const std::string& local_cluster_id);
  // Reads the cluster state, registers this broker at `host:port` (refused while another live
  // broker holds the same node.id), applies this broker's roles and starts the controller
  // candidacy, the ISR checks and the replica fetchers. After connect().
  // host:port is the inter-broker listener's address; `endpoints` every listener's, by name.
  Status start(const std::string& host, int32_t port,
               std::map<std::string, std::string> endpoints = {});
  // Clean shutdown, first half: asks the controller to move leadership away and waits (at most
  // `wait_ms`) until this broker leads nothing it shares with a live in-sync replica.
  void begin_shutdown(int64_t wait_ms);
  // Stops fetchers, controller and membership (revoking the lease). Idempotent.
  void stop();

  const ClusterOptions& options() const { return options_; }
  std::shared_ptr<const ClusterSnapshot> snapshot() const;
  Coordination& coordination();
  const Layout& layout() const { return layout_; }
  MetadataView& view();
  // The broker holding the controller key (-1 = none right now).
  int32_t controller_id() const;
  // Whether this broker is the active controller right now.
  bool controller_active() const;

  // Topic administration through etcd (topic_admin.h), returning once this broker's view has
  // the change (read-your-writes for the Metadata that usually follows). Errors as topic_admin's.
  Result<TopicRecord> create_topic(const NewTopic& topic);
  Status delete_topic(const std::string& name);
  Result<TopicRecord> add_partitions(const std::string& name, int32_t new_total);
  // A topic's record as etcd holds it now. Read from etcd, not the view: a topic just created
  // through another broker may not be in this broker's view yet, and a broker without a replica
  // of a topic has no local copy of its configs. not_found, io_error, corruption (a record that
  // does not decode).
  Result<TopicRecord> read_topic(const std::string& name);
  // Edits a topic's config overrides in etcd: reads its record (as read_topic), runs `edit` on
  // its overrides and stores the result with a compare-and-swap, reading again when another
  // change came in between (a few times, then unavailable). Every broker with a replica applies
  // the result from the view. Returns the overrides stored; `store` false = edit only (checks).
  // `edit`'s errors are returned as they are; else not_found, io_error, unavailable.
  using ConfigEdit = std::function<Result<std::map<std::string, std::string>>(
      const std::map<std::string, std::string>& current)>;
  Result<std::map<std::string, std::string>> edit_topic_configs(const std::string& name,
                                                                const ConfigEdit& edit, bool store);
  // Partition reassignment and leader elections through etcd (reassignment.h), from any broker;
  // a write returns once this broker's view has it. `target` nullopt = cancel.
  AdminOutcome reassign(const std::string& topic, int32_t partition,
                        const std::optional<std::vector<int32_t>>& target);
  AdminOutcome elect_leader(const std::string& topic, int32_t partition, bool unclean);
  // The cluster's id, the same on every broker (kept in etcd; the first broker chose it).
  const std::string& cluster_id() const { return cluster_id_; }

  // none when this broker leads the partition at `current_leader_epoch` (-1 = any epoch);
  // else not_leader_or_follower, fenced_leader_epoch (the caller's epoch is older) or
  // unknown_leader_epoch (newer than this broker knows), unknown_topic_or_partition.
  protocol::ErrorCode leader_check(std::string_view topic, int32_t partition,
                                   int32_t current_leader_epoch) const;
  // none when this broker holds a replica of the partition (leader or follower), as the view
  // says; else not_leader_or_follower (unknown_topic_or_partition for an unknown partition).
  protocol::ErrorCode replica_check(std::string_view topic, int32_t partition) const;
  // acks=all before the append: not_enough_replicas when the ISR is smaller than `min_isr`.
  protocol::ErrorCode min_isr_check(std::string_view topic, int32_t partition,
                                    int32_t min_isr) const;
  // The ISR as this leader last wrote or read it (empty when not the leader).
  std::vector<int32_t> isr(std::string_view topic, int32_t partition) const;
  // A follower fetched at `fetch_offset` while the leader's log ended at `leader_log_end`: moves
  // its position and maybe the high watermark; may propose an ISR expansion (not while the
  // follower says its primary-key state is pending).
  void on_follower_fetch(std::string_view topic, int32_t partition, int32_t replica,
                         int64_t fetch_offset, int64_t leader_log_end, bool state_pending = false);
  // The replica manager's counters and partitions (metrics).
  ReplicaManagerStats replica_stats() const;
  // This broker's PK state of the partition cannot be rebuilt from its log (the log no longer
  // starts at 0): copy the leader's newest checkpoint (checkpoint_copier.h), then reopen it.
  void copy_pk_checkpoint(const std::string& topic, int32_t partition);
  // The leader's own durable end moved (the log's log_end listener).
  void on_log_end(const storage::PartitionLog& log, int64_t end);

 private:
  const ClusterOptions options_;
  const Layout layout_;
  TopicRegistry& topics_;
  const LocalTopicHooks hooks_;
  std::unique_ptr<EtcdClient> etcd_;
  std::unique_ptr<MetadataView> view_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<Controller> controller_;
  // Before replicas_: its fetchers ask the copier about pending states until they stop.
  std::unique_ptr<CheckpointCopier> copier_;
  std::unique_ptr<ReplicaManager> replicas_;
  // Waits (bounded) until the view reflects etcd as it is now.
  void catch_up();
  std::string cluster_id_;
  std::mutex lifecycle_mu_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace strata::broker::cluster
