// LogGroupJournal: a coordinator's journal on a compacted internal topic (Kafka's model): the group
// coordinator's on `__consumer_offsets` (`offsets.topic.num.partitions` partitions, replicated like
// any topic in cluster mode with `offsets.topic.replication.factor`), the transaction
// coordinator's on `__transaction_state` (`transaction.state.log.*`).
//  - append: queued for the journal's writer thread, which appends the records to the partition's
//    leader log — refused unless this broker leads it with enough in-sync replicas — and answers
//    once the high watermark passed them (every in-sync replica has them) in the same leader
//    term, else after `offsets.commit.timeout.ms` (COORDINATOR_NOT_AVAILABLE, as Kafka maps
//    REQUEST_TIMED_OUT). On a single node the topic is created on first use with
//    flush.messages=1: each write is fsynced before it is answered (no replica would survive a
//    crash for it). The writer appends the writes queued for a partition meanwhile as shared
//    batches (each write whole inside one, in call order, up to the topic's max.message.bytes):
//    on a single node one fsync for all the commits that arrived during the last one (group
//    commit), in a cluster fewer, larger batches to replicate; and the callers (which hold their
//    coordinator's lock) never wait for the disk. A cluster write keeps the leader term of its
//    append() call: queued across a change of leadership it is refused (not_coordinator).
//  - replay: the partition's records from its log start to its log end (a new leader loads what
//    its log holds; nothing past it can become committed without it).
//  - run_async: one worker thread for partition loads.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "broker/group/group_journal.h"
#include "broker/net/asio.h"
#include "broker/topics/topic_registry.h"

namespace strata::broker {
class PartitionWatchers;
namespace cluster {
class ClusterNode;
}
}  // namespace strata::broker

namespace strata::broker::group {

inline constexpr const char* kOffsetsTopic = kConsumerOffsetsTopic;

struct OffsetsTopicOptions {
  std::string name = kConsumerOffsetsTopic;
  int32_t partitions = 50;            // offsets.topic.num.partitions
  int32_t replication_factor = 3;     // offsets.topic.replication.factor (cluster mode)
  int64_t segment_bytes = 104857600;  // offsets.topic.segment.bytes
  int32_t commit_timeout_ms = 5000;   // offsets.commit.timeout.ms
  int32_t min_insync_replicas = 0;    // the topic's min.insync.replicas (0 = the broker default)
};

// How the writer splits consecutive writes of `write_bytes` (each an upper bound of its encoded
// records) into batches of at most `max_bytes`: the end index of each run, in order. A write that
// does not fit beside the ones before it starts a run; one too large alone is a run of its own
// (then refused when built).
std::vector<size_t> journal_runs(std::span<const size_t> write_bytes, size_t max_bytes);

class LogGroupJournal : public GroupJournal {
 public:
  // `cluster` null = a single node. Everything referenced outlives the journal.
  LogGroupJournal(OffsetsTopicOptions options, TopicRegistry& topics, PartitionWatchers& watchers,
                  boost::asio::io_context& io, cluster::ClusterNode* cluster);
  ~LogGroupJournal() override;

  // The topic's partition count once it exists (a changed offsets.topic.num.partitions must not
  // move groups away from their records), else offsets.topic.num.partitions.
  int32_t partitions() const override;
  bool partitions_fixed() const override;
  void append(int32_t partition, std::vector<JournalRecord> records, AppendDone done) override;
  // max.message.bytes less the batch header (0 when the limit is below a header); unbounded while
  // the topic does not exist here — a cluster's writes then fail whatever their size; a single
  // node creates the topic at its first write (with the broker's message.max.bytes).
  size_t max_write_bytes() const override;
  Status replay(int32_t partition, const std::function<Status(const JournalRecord&)>& fn) override;
  // replay() of the committed records only: those below this broker's replica's high watermark
  // (a follower's copy must not hold what a new leader may truncate). Returns that high
  // watermark; Errc::not_found when this broker holds no replica of the partition.
  Result<int64_t> replay_committed(int32_t partition,
                                   const std::function<Status(const JournalRecord&)>& fn);
  void run_async(std::function<void()> fn) override;
  // Stops the worker (queued loads are dropped) and the writer: on a single node the writes
  // queued before are appended first; in a cluster (its replication stopped) they are answered
  // not_coordinator; a later append is answered coordinator_not_available. Idempotent; before
  // the coordinator goes.
  void stop();

  // The topic's own configs (compacted; fsync per write on a single node).
  std::map<std::string, std::string> topic_configs() const;
  // Cluster mode: none when the topic exists (or on a single node). Else starts its creation in
  // etcd on the worker — at most one at a time; FindCoordinator and Metadata ask, as Kafka's do —
  // and answers coordinator_not_available at once: the I/O thread never waits for etcd and the
  // view (clients retry, as with Kafka's answer while the topic is being created).
  protocol::ErrorCode request_cluster_topic();
  // Single node, before serving: appends `records` to the partitions of their groups (one batch
  // per partition, fsynced). Records of no group are skipped.
  Status import_records(const std::vector<JournalRecord>& records);
  // Single node: the topic, created when missing. Null when creation failed.
  std::shared_ptr<const TopicEntry> local_topic(bool create);

 private:
  class Wait;
  // A write waiting for the writer thread, and its answer once appended.
  struct Queued {
    int32_t partition;
    int32_t epoch;  // cluster: the partition's leader term at append(); -1 on a single node
    std::vector<JournalRecord> records;
    AppendDone done;
  };
  struct Answer {
    AppendDone done;
    int64_t last_offset;
  };
  void worker();
  void writer();
  // Appends `writes` (one partition's, in call order) as batches of one leader term each, of at
  // most max.message.bytes.
  void write_partition(int32_t partition, std::vector<Queued*>& writes);
  // Appends the records of `run` as one batch and hands their answers to a Wait.
  void append_run(int32_t partition, const std::shared_ptr<const TopicEntry>& topic,
                  std::span<Queued* const> run);
  void fail(AppendDone done, protocol::ErrorCode e);
  // Creates the topic in etcd and waits for the view to have it (up to 5 s). None, or
  // coordinator_not_available (too few live brokers for the replication factor, etcd unreachable).
  protocol::ErrorCode create_cluster_topic();

  // Records of `partition`'s local replica from its start to `end` (exclusive), in log order.
  Status replay_to(storage::PartitionLog& log, int64_t end,
                   const std::function<Status(const JournalRecord&)>& fn);

  const OffsetsTopicOptions options_;
  TopicRegistry& topics_;
  PartitionWatchers& watchers_;
  boost::asio::io_context& io_;
  cluster::ClusterNode* const cluster_;
  std::mutex create_mu_;
  std::atomic<bool> creating_{false};  // a create_cluster_topic() is queued or running

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;

  std::mutex write_mu_;
  std::condition_variable write_cv_;
  std::vector<Queued> writes_;  // in call order
  bool writer_stopping_ = false;
  std::thread writer_thread_;
};

}  // namespace strata::broker::group
