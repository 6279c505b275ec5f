// PkTables: the broker's primary-key table service. Owns the shared RocksDB resources
// (pkindex::PkEnvironment) and one pkindex::PkState per partition of every topic created with
// table.type=primary-key. States of existing PK topics are opened (and recovered by log replay) at
// start; a new PK topic's states open on first use. Owned by Broker (constructed after the
// TopicRegistry, closed after the io threads joined and before the logs close). Thread-safe.
// Durability: one checkpoint thread for the broker takes each open
// partition's RocksDB checkpoint every table.kv.snapshot.interval.ms (re-read from the topic's
// configs each round) or when retention asks; every PK log's retention bound is the state's
// PkState::retention_bound(). A partition whose state cannot be opened/recovered stays offline
// (get() keeps failing, KAFKA_STORAGE_ERROR) without stopping the broker.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "broker/schema/table_schema.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/pk_environment.h"
#include "pkindex/pk_state.h"
#include "protocol/base/result.h"

namespace strata::broker {

class PkTables {
 public:
  // `replicated`: cluster mode, where every partition's state follows its replica role (see
  // on_role / on_high_watermark) and only committed records are applied.
  // `memory`: the block cache and memtable budget every partition shares (pk.block.cache.bytes,
  // pk.write.buffer.bytes).
  explicit PkTables(TopicRegistry& topics, bool replicated = false,
                    pkindex::PkEnvironment::Options memory = {});
  ~PkTables();

  // Opens every partition of every PK topic the registry knows.
  Status open_all();
  // The state of `partition` of `topic`: nullptr when the topic is not a PK table; an error when
  // the partition does not exist or its state cannot be opened/recovered.
  Result<std::shared_ptr<pkindex::PkState>> get(const TopicEntry& topic, int32_t partition);
  // The parsed table config of a PK topic (null for a log topic or invalid configs), the topic
  // entry's: valid while the caller holds the entry.
  static const pkindex::TableConfig* table_config(const TopicEntry& topic);
  // The topic is being deleted: closes and forgets its states (before its directories go). Final:
  // from the moment it starts, get() of this topic fails with not_found (a request that raced
  // DeleteTopics gets UNKNOWN_TOPIC_OR_PARTITION and never reopens a state over a log being
  // removed). The states are closed outside the service lock (get() of other tables never waits).
  void drop(const TopicEntry& topic);
  // Appends a transaction marker to `partition` of `topic` (its log `log`): on a PK table through
  // the partition's state, which applies (COMMIT) or drops (ABORT) the transaction's rows with
  // the marker (pkindex::PkState::end_transaction); on a log topic straight to the log.
  Result<storage::PartitionLog::AppendInfo> append_marker(
      const TopicEntry& topic, int32_t partition, storage::PartitionLog& log, int64_t producer_id,
      int16_t epoch, int32_t coordinator_epoch, bool commit, int64_t now_ms);
  // the state of `partition` if it is open (never opens one), and
  // the shared RocksDB environment (block cache, statistics).
  std::shared_ptr<pkindex::PkState> find_open(const TopicEntry& topic, int32_t partition);
  const pkindex::PkEnvironment& environment() const { return env_; }
  // The Schema Registry confluent tables decode their writers' values with (set once it serves).
  const std::shared_ptr<schema::RegistryHandle>& registry_handle() const { return registry_; }
  // Closes (flushing) every state. Later get() calls fail with Errc::shutting_down.
  Status close_all();

  // --- Cluster mode (replicated) ---
  // This broker now leads (or follows) `partition` of `topic`: the state holds the log's
  // uncommitted tail for compute (leader) or drops what it held (follower), then applies what is
  // committed. Called by the replica manager before a new leader takes writes. No-op for log
  // topics.
  void on_role(const std::string& topic, int32_t partition, bool leader);
  // A partition log's high watermark moved: its PK state (if open) applies up to it. A state
  // found ahead of its log (an unclean truncation) is reopened, which restores a checkpoint.
  // Any thread; cheap for log topics.
  void on_high_watermark(const storage::PartitionLog& log, int64_t hw);
  // A replica's state that cannot open because its log no longer starts at 0 and no local
  // checkpoint lies in it is reported here (set before open_all; the broker copies the leader's
  // checkpoint); retry_open() then reopens it from the copied checkpoint.
  void set_behind_log_start(std::function<void(const std::string&, int32_t)> fn) {
    behind_log_start_ = std::move(fn);
  }
  // True once the state is open (or the topic is gone: nothing left to open).
  bool retry_open(const std::string& topic, int32_t partition);

  // --- Checkpoints (pk_checkpoints.cc) ---
  struct Tasks {
    int32_t checkpoints_retained = 2;        // pk.checkpoint.retained
    bool compact_before_checkpoint = false;  // test.fault.pk.compact.before.checkpoint
    int64_t memtable_idle_flush_ms = 60000;  // pk.memtable.idle.flush.ms
  };
  // Call before open_all(); starts the checkpoint thread (stopped by close_all()).
  void start_tasks(Tasks tasks);
  // Retention could delete a segment of this PK partition but its bound blocks it: checkpoint the
  // partition soon (which flushes the memtable), so a later pass can proceed.
  void request_checkpoint(const TopicEntry& topic, int32_t partition);

 private:
  using Key = std::pair<std::string, int32_t>;
  static Key key_of(const TopicEntry& topic, int32_t partition);
  void checkpoint_loop();
  void stop_tasks();
  Tasks tasks_;
  std::thread checkpoint_thread_;
  std::condition_variable cv_;     // with mu_
  bool stop_tasks_ = false;        // guarded by mu_
  std::set<Key> requested_;        // guarded by mu_
  std::map<Key, Status> offline_;  // guarded by mu_: states that failed to open/recover

  TopicRegistry& topics_;
  pkindex::PkEnvironment env_;
  std::shared_ptr<schema::RegistryHandle> registry_;  // the topic registry's
  std::mutex mu_;
  bool closed_ = false;
  // Key: topic id bytes + partition index.
  std::map<std::pair<std::string, int32_t>, std::shared_ptr<pkindex::PkState>> states_;
  // Ids of deleted topics (guarded by mu_); get() refuses them for the life of the broker. Topic
  // ids are random UUIDs, never reused, and a few bytes per deleted topic.
  std::set<std::string> dropped_;

  const bool replicated_;
  std::function<void(const std::string&, int32_t)> behind_log_start_;
  std::set<Key> behind_;  // offline replicas a checkpoint copy can bring up (mu_)
  // Cluster mode: the open states by log (for the high-watermark listener) and the role each
  // partition was given (applied again when a state is reopened).
  struct ByLog {
    std::weak_ptr<pkindex::PkState> state;
    std::string topic;
    int32_t partition = 0;
  };
  mutable std::shared_mutex by_log_mu_;
  std::unordered_map<const storage::PartitionLog*, ByLog> by_log_;  // guarded by by_log_mu_
  std::map<std::pair<std::string, int32_t>, bool> leader_roles_;    // by name; guarded by mu_
  void apply_role(pkindex::PkState& state, const storage::PartitionLog& log, bool leader,
                  const std::string& topic, int32_t partition);
};

}  // namespace strata::broker
