// TxnCoordinator: the transaction coordinator of a single node. It owns one TxnStateMachine
// (txn_state.h) per transactional id and carries out what each transition asks for: COMMIT/ABORT
// markers on every partition of the transaction, the transaction's consumer offsets made visible
// at commit (dropped at abort), and aborts of transactions past their timeout.
//
// Requests for one transactional id are serialised by that id's mutex, which is also held while a
// transactional batch is appended (append_in_txn): a marker can never be written between the check
// that a partition belongs to the transaction and the append of the producer's batch, so no batch
// lands after its transaction's marker and leaves the partition's LSO stuck.
//
// The state is persisted in a journal (the `__transaction_state` topic, txn_records.h): every
// change of an id's state or of its transaction's offsets is written as a full snapshot of that id,
// and a request that changed it is answered only once what it saw is durable (when_durable). The
// markers of a commit or abort are written only after its Prepare* state is durable, so a restart
// (load) finishes every transaction it finds in Prepare*: the decision survives a crash. Without a
// journal (unit tests of the rest) the state lives in memory.
//
// Ownership. A single node coordinates every transactional id (load() reads all partitions). In a
// cluster, as in Kafka, the coordinator of an id is the leader of its `__transaction_state`
// partition (partition_for): own_partition() loads that partition's ids when this broker becomes
// its leader — requests for them answer COORDINATOR_LOAD_IN_PROGRESS meanwhile, NOT_COORDINATOR
// for partitions it does not own — and release_partition() forgets them when leadership moves.
// The partition's leader epoch is the coordinator epoch written into (and checked by) markers, so
// a deposed coordinator's late markers are fenced. In a cluster markers travel to partition
// leaders on other brokers and wait for replication, so a worker thread writes them (retrying
// every `marker_retry_ms` while they fail) instead of the thread that made the decision durable.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "broker/group/group_journal.h"
#include "broker/txn/txn_state.h"
#include "protocol/base/result.h"

namespace strata::broker::txn {

// One consumer offset committed inside a transaction (TxnOffsetCommit).
struct PendingOffset {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
};

// What the coordinator needs of the rest of the broker (tests substitute their own).
class TxnEffects {
 public:
  virtual ~TxnEffects() = default;
  // Appends a COMMIT (or ABORT) marker of (producer_id, epoch) to one partition. True when the
  // partition needs nothing more (written, refused as stale, or the partition is gone); false on
  // a failure worth retrying (the sweep retries).
  // `coordinator_epoch`: the epoch of the coordinator writing it (0 on a single node).
  virtual bool write_marker(const TopicPartition& tp, int64_t producer_id, int16_t epoch,
                            bool commit, int32_t coordinator_epoch) = 0;
  // The same for several partitions at once (a cluster sends one request per leader); result i
  // is write_marker's answer for tps[i].
  virtual std::vector<bool> write_markers(const std::vector<TopicPartition>& tps,
                                          int64_t producer_id, int16_t epoch, bool commit,
                                          int32_t coordinator_epoch) {
    std::vector<bool> out;
    out.reserve(tps.size());
    for (const auto& tp : tps) {
      out.push_back(write_marker(tp, producer_id, epoch, commit, coordinator_epoch));
    }
    return out;
  }
  // Commits a committed transaction's (of `producer_id`) offsets for `group`; `done` runs once
  // they are durable (or failed), possibly on another thread.
  virtual void commit_offsets(const std::string& group, int64_t producer_id,
                              std::vector<PendingOffset> offsets, std::function<void()> done) = 0;
  // An aborted transaction had offsets for `group` (a cluster's group coordinator forgets that
  // they were pending). Best effort.
  virtual void abort_offsets(const std::string& /*group*/, int64_t /*producer_id*/) {}
  virtual Result<int64_t> new_producer_id() = 0;
};

struct InitResult {
  TxnError error = TxnError::none;
  bool no_producer_id = false;  // a producer id could not be allocated
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

struct TxnClusterMode {
  bool enabled = false;           // ids owned partition by partition, markers written apart
  int64_t marker_retry_ms = 250;  // a failed marker is written again after this long
  bool marker_thread = true;      // false: only write_due_markers() writes them (tests)
};

class TxnCoordinator {
 public:
  // `id_expiration_ms` (transactional.id.expiration.ms, 0 = never): a transactional id with no
  // open transaction and no request for that long is forgotten by the sweep. `journal`: where the
  // state is persisted (null = in memory only); it must outlive the coordinator, and its append
  // callbacks must not run after the coordinator is gone.
  // `cluster.enabled`: ids are owned partition by partition (own_partition) and markers are
  // written by the worker thread; otherwise every id is owned and markers are written inline.
  TxnCoordinator(TxnLimits limits, TxnEffects& effects, int64_t id_expiration_ms = 0,
                 group::GroupJournal* journal = nullptr, TxnClusterMode cluster = {});
  ~TxnCoordinator() { stop(); }

  // The id's `__transaction_state` partition (Kafka's rule: Java hashCode modulo the count).
  int32_t partition_for(const std::string& txn_id) const;
  // none when this coordinator serves the id now; not_coordinator or coordinator_load_in_progress.
  TxnError owner_error(const std::string& txn_id);
  // Cluster: this broker now leads partition `p` in `coordinator_epoch` (its leader epoch): loads
  // it on the journal's worker and finishes its Prepare* transactions. A failed load is retried
  // at the next call (the hook calls again on every view change). No-op when already owned in
  // that epoch.
  void own_partition(int32_t p, int32_t coordinator_epoch);
  // Cluster: leadership of `p` moved away: its ids are forgotten at once (their waiting requests
  // are answered NOT_COORDINATOR); the new leader loads them from the replicated log.
  void release_partition(int32_t p);
  // For tests and metrics: partitions owned and loaded.
  std::vector<int32_t> owned_partitions();
  // Cluster: writes the markers of every transaction whose turn has come (`now_steady_ms` on the
  // steady clock); returns how many transactions it tried (released ones are skipped). The worker
  // thread's step.
  size_t write_due_markers(int64_t now_steady_ms);

  // Single node, before serving: reads every transactional id's newest state from the journal
  // (every partition: a single node coordinates them all) and finishes each transaction found in
  // Prepare* (markers, then offsets). An Ongoing transaction stays open (its producer may still
  // commit it; the timeout aborts it otherwise). `skipped` counts records it could not read
  // (logged).
  struct LoadStats {
    size_t ids = 0;
    size_t ongoing = 0;
    size_t completed = 0;  // Prepare* transactions finished by the load
    size_t skipped = 0;
  };
  Result<LoadStats> load(int64_t now_ms);
  // (producer id, partition) of every ongoing transaction: the partitions' open transactions the
  // coordinator still owns (the others are orphans: abort_orphaned_transactions).
  std::set<std::pair<int64_t, TopicPartition>> open_transactions();
  // Runs `done` once the id's state as of this call is durable — at once when it already is (or
  // the id is unknown), coordinator_not_available when writing it failed (the next request or the
  // sweep writes it again). Requests that change the state are answered through it.
  void when_durable(const std::string& txn_id, std::function<void(TxnError)> done);

  // InitProducerId with a transactional id. `expected_*` (v3+, -1 = none) must be the id's
  // current producer, else producer_fenced — or its previous epoch right after a bump (a retry
  // whose answer was lost: the current epoch is returned, no second bump). An open transaction is
  // aborted first (its markers are written now) and the answer is concurrent_transactions: the
  // client retries.
  InitResult init_producer_id(const std::string& txn_id, int32_t timeout_ms,
                              int64_t expected_producer_id, int16_t expected_epoch, int64_t now_ms);
  TxnError add_partitions(const std::string& txn_id, int64_t producer_id, int16_t epoch,
                          const std::vector<TopicPartition>& partitions, int64_t now_ms);
  // AddOffsetsToTxn: the group's offsets join the transaction (it starts if none is open).
  TxnError add_offsets(const std::string& txn_id, int64_t producer_id, int16_t epoch,
                       const std::string& group, int64_t now_ms);
  // TxnOffsetCommit: the offsets wait in the transaction; none is visible before the commit.
  // invalid_txn_state when no transaction with this group is open.
  TxnError commit_offsets(const std::string& txn_id, const std::string& group, int64_t producer_id,
                          int16_t epoch, std::vector<PendingOffset> offsets);
  // EndTxn. `done` runs once the Prepare* state is durable, the markers are written and, on commit,
  // the offsets are durable (possibly on another thread); a marker write that fails leaves the
  // transaction completing (the sweep retries it) and is answered none: the decision is taken.
  void end_txn(const std::string& txn_id, int64_t producer_id, int16_t epoch, bool commit,
               std::function<void(TxnError)> done);
  // Runs `append` while the id's transaction is held, when (producer_id, epoch) is its producer
  // and `tp` belongs to its ongoing transaction; otherwise returns the error (producer_fenced for
  // an older epoch, invalid_txn_state or invalid_producer_id_mapping) without running it.
  TxnError append_in_txn(const std::string& txn_id, int64_t producer_id, int16_t epoch,
                         const TopicPartition& tp, const std::function<void()>& append);
  // Whether an open or completing transaction holds an offset of `group` for this partition
  // (OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT then).
  bool has_pending_offset(const std::string& group, const std::string& topic, int32_t partition);
  // Aborts every transaction past its timeout (epoch bump), retries unfinished markers and forgets
  // expired transactional ids. Returns the number of transactions it aborted.
  size_t sweep(int64_t now_ms);
  std::optional<TxnMetadata> describe(const std::string& txn_id);

  // A thread that calls sweep() every `interval_ms` (transaction.abort.timed.out.transaction.
  // cleanup.interval.ms) until stop().
  void start(int64_t interval_ms);
  void stop();

  // Every transactional id with its state, by id (ListTransactions). Each entry is read under its
  // own mutex, so the list is a consistent view of each id, not of all of them at one instant.
  std::vector<std::pair<std::string, TxnMetadata>> list();

 private:
  using Answer = std::function<void(TxnError)>;
  struct Entry : std::enable_shared_from_this<Entry> {
    std::mutex mu;
    Entry(std::string i, TxnLimits l) : id(std::move(i)), sm(l) {}
    const std::string id;
    TxnStateMachine sm;
    // group (added by AddOffsetsToTxn) -> (topic, partition) -> offset, of the open transaction
    std::map<std::string, std::map<TopicPartition, PendingOffset>> offsets;
    std::set<TopicPartition> markers_done;  // of the completing transaction
    // The version that added each partition of the ongoing transaction: a batch is taken only
    // once its partition's membership is durable (else a crash could drop it from the
    // transaction while the batch stays, and the restart would abort it there alone).
    std::map<TopicPartition, uint64_t> added_in;
    int64_t last_used_ms = 0;  // InitProducerId, AddPartitions, AddOffsets
    // The epoch before the last InitProducerId bump of the same producer id, -1 after a fence
    // (Kafka's lastProducerEpoch): an InitProducerId expecting it is a retry whose answer was
    // lost, answered with the current epoch. In memory only, as Kafka's v0 log does not keep it.
    int16_t last_epoch = -1;
    std::atomic<bool> removed{false};  // expired or released: no longer in entries_
    int32_t partition = 0;             // of __transaction_state
    int32_t coordinator_epoch = 0;     // of this coordinator when it loaded (created) the entry
    bool markers_queued = false;       // cluster: a marker job for it waits for the worker
    // Durability: every change of what is persisted bumps `version`; `writing` is the newest
    // version handed to the journal, `durable` the newest it has.
    uint64_t version = 0;
    uint64_t writing = 0;
    uint64_t durable = 0;
    std::vector<std::pair<uint64_t, Answer>> waiters;  // when_durable
    std::vector<Answer> end_waiters;                   // EndTxn, answered at completion
  };
  // Null when absent and !create, or when this coordinator does not serve the id's partition.
  std::shared_ptr<Entry> entry(const std::string& txn_id, bool create);
  // Why an id has no entry: owner_error, else invalid_producer_id_mapping.
  TxnError missing(const std::string& txn_id);
  // The id's entry with its mutex held (null when absent and !create); never a removed one.
  struct Held {
    std::shared_ptr<Entry> e;
    std::unique_lock<std::mutex> l;
  };
  Held held(const std::string& txn_id, bool create);
  // Writes the missing markers of a Prepare* state; once all are written completes it (and
  // commits or drops its offsets). `done` (may be null) runs when the commit's offsets are
  // durable. Returns false when some marker must be retried. Holds e.mu.
  bool complete(Entry& e, std::function<void()> done);
  // A change of what is persisted: bump the version and write it.
  void changed(Entry& e);
  // Hands the entry's current version to the journal unless it is already being written.
  void persist(Entry& e);
  void on_written(const std::shared_ptr<Entry>& e, uint64_t version, bool ok);
  // Once a Prepare* state is durable: writes its markers and completes it, answering the EndTxn
  // waiters. Returns the answers to run after e.mu is released.
  std::vector<std::function<void()>> advance(Entry& e);
  // advance()'s work: the markers, then the EndTxn answers (on the worker in a cluster).
  std::vector<std::function<void()>> write_markers(Entry& e);
  void marker_worker();
  // Reads partition `p` of the journal into entries (not yet published): the ids whose newest
  // state it holds. Counts into `stats`.
  Result<std::vector<std::shared_ptr<Entry>>> read_partition(int32_t p, int64_t now_ms,
                                                             LoadStats& stats);
  // Publishes loaded entries (under mu_) and finishes their Prepare* transactions.
  void install(std::vector<std::shared_ptr<Entry>> loaded);
  void load_owned(int32_t p, uint64_t token);
  std::vector<std::function<void()>> ready_waiters(Entry& e, uint64_t failed_version);
  void drop_offsets(Entry& e);
  void release_pending(const std::string& group, const std::vector<TopicPartition>& tps);

  const TxnLimits limits_;
  TxnEffects& effects_;
  const int64_t id_expiration_ms_;
  group::GroupJournal* const journal_;
  const bool cluster_;
  const TxnClusterMode mode_;
  std::mutex mu_;  // entries_, owned_
  std::map<std::string, std::shared_ptr<Entry>> entries_;
  struct Owned {
    bool loaded = false;
    bool failed = false;  // the load failed: the sweep starts it again
    int32_t epoch = -1;
    uint64_t token = 0;  // of the load that is current: a stale one publishes nothing
  };
  std::map<int32_t, Owned> owned_;  // cluster only
  uint64_t next_token_ = 1;
  std::atomic<int32_t> partitions_cache_{0};

  // Cluster: entries whose markers the worker writes next, with when (steady ms) it may.
  std::mutex marker_mu_;
  std::condition_variable marker_cv_;
  std::deque<std::pair<int64_t, std::shared_ptr<Entry>>> marker_jobs_;
  bool marker_stopping_ = false;
  std::thread marker_thread_;
  std::mutex pending_mu_;
  // group -> partition -> how many transactions hold an uncommitted offset for it
  std::map<std::string, std::map<TopicPartition, int>> pending_;

  std::mutex sweep_mu_;
  std::condition_variable sweep_cv_;
  bool stopping_ = false;
  std::thread sweeper_;
};

}  // namespace strata::broker::txn
