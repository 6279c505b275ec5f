// PkState: the current rows of one primary-key table partition, in a RocksDB instance under
// `<partition dir>/kv/`, kept in step with the partition log (the changelog).
//
// The write sequence is owned here (as LevelDB's DBImpl::Write owns its): write() takes the
// partition's write mutex, computes the output batch from the input against RocksDB plus the
// overlay of computed-but-unapplied batches (pkindex/pk_overlay.h), checks its size, hands it to
// the caller's append, then applies it — or, when the append failed or appended nothing (an
// idempotent duplicate or rejection), rolls the overlay back. The output batch has one record per
// input record at the same offset delta, value = row after, headers strata.change (+ strata.before
// in full mode, + strata.append_time on TTL tables). With `hold`, the appended batch stays in the
// overlay until apply_at() reaches its offset (a high watermark, a transaction commit).
// apply_changelog() applies a stored changelog batch's after-images (recovery, followers): it
// never re-runs the merge engine.
// Log first, state second: an EventListener fsyncs the partition log (PartitionLog::flush) when a
// memtable flush begins, so RocksDB never persists state for offsets the log has not made durable.
// open() replays the log from the persisted applied offset with apply_changelog().
// Transactions (pk_txn.cc): a transactional batch is computed against the committed rows plus its
// own transaction's earlier rows, appended, and held in its transaction until end_transaction()
// writes the marker: COMMIT applies the rows, ABORT drops them. Keys an open transaction wrote are
// locked against every other writer (Errc::busy, nothing appended), so the change kinds and
// before-images computed at append time stay right whatever the holder decides: the state is the
// replay of the committed changelog records in log order (docs/invariants.md).
//
// Owned by the broker's PkTables service (or a test); the PartitionLog and PkEnvironment must
// outlive it. Thread-safety: every method may be called from any thread. Writes (write, apply_at,
// apply_changelog) serialise on the write mutex; lookups, scans, applied_offset(), estimates,
// properties and checkpoint info run concurrently with them and with close(): every RocksDB read
// holds db_mu_ shared, close() takes the write mutex and then db_mu_ exclusively, and reads after
// (or during) close() fail with Errc::shutting_down.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkindex/confluent_values.h"
#include "pkindex/merge_engine.h"
#include "pkindex/pk_environment.h"
#include "pkindex/pk_overlay.h"
#include "pkindex/pk_ttl.h"
#include "pkindex/row_format.h"
#include "pkindex/table_config.h"
#include "protocol/base/result.h"
#include "protocol/codec/compression.h"
#include "protocol/record/record_batch.h"
#include "storage/partition_log.h"

namespace rocksdb {
class DB;
class Iterator;
class WriteBatch;
}  // namespace rocksdb

namespace strata::pkindex {

class PkSnapshot;         // pkindex/pk_scan.h
struct SnapshotRegistry;  // pkindex/pk_scan.h
struct ScanPage;          // pkindex/pk_scan.h

// A RocksDB checkpoint of the state (pk_checkpoint.cc): the applied offset it holds and when it was
// made (ms since the epoch); -1/-1 when there is none.
struct CheckpointInfo {
  int64_t offset = -1;
  int64_t created_ms = -1;
};

struct RecordError {
  int32_t index;  // the record's position in the batch
  std::string message;
};

// The caller's log append (PartitionLog::append on a leader). It may rewrite the batch's base
// offset and leader epoch in place; producer_check says whether anything was appended.
using AppendFn = std::function<Result<storage::PartitionLog::AppendInfo>(std::span<uint8_t>)>;

struct WriteInput {
  protocol::RecordBatchView batch;  // one validated v2 batch (CRC checked, LogAppendTime stamped)
  codec::Compression codec = codec::Compression::none;  // the output batch's encoding
  // An output batch larger than this is refused (Errc::too_large) before anything is appended;
  // the broker passes changelog_batch_limit(max.message.bytes). However large this is, an output
  // whose records outgrow protocol::RecordReader::kDefaultMaxDecompressedBytes is refused too
  // (early, so a write cannot make the broker build a huge batch): replay and followers could not
  // read it back.
  int64_t max_batch_bytes = std::numeric_limits<int64_t>::max();
  // A record whose key, value and headers together are larger than this, once decompressed, is
  // refused (Errc::too_large with record_errors) before anything is appended. The batch checks see
  // only the compressed size, and a small compressed batch can carry a row of tens of MiB that
  // every later Lookup, Scan and changelog read would have to serve (the broker passes
  // max.message.bytes).
  int64_t max_record_bytes = std::numeric_limits<int64_t>::max();
  // Keep the appended batch in the overlay (unapplied) until apply_at() reaches its last offset.
  bool hold = false;
};

// The largest changelog batch a write of a topic with `max_message_bytes` may append.
// max.message.bytes bounds what a client sends, as in Kafka; the changelog batch derived from it
// carries what the broker adds — change-kind and TTL headers, before-images in full image mode,
// whole rows where a merge engine folds a small write into a row — so a batch of small records
// that fits comes out up to ~3.6x larger (tiny updates with TTL and before-images). Refusing
// that would fail librdkafka, which never splits a batch, at its default batch.size: the
// changelog may be up to 4x the topic's limit (consumers read a batch over their fetch sizes
// whole, KIP-74).
inline constexpr int64_t kChangelogBatchFactor = 4;
inline int64_t changelog_batch_limit(int64_t max_message_bytes) {
  return std::min<int64_t>(max_message_bytes, std::numeric_limits<int32_t>::max() / 4) *
         kChangelogBatchFactor;
}

struct WriteResult {
  // ok: the output batch went to the append; `appended` is its result. producer_check ok = it was
  // appended (and applied unless held); duplicate / out_of_order / stale_epoch = nothing was
  // appended or applied. Errors (nothing appended unless said): invalid_argument (bad records,
  // see record_errors), corruption (the input cannot be decoded), too_large (output over
  // max_batch_bytes, or records over max_record_bytes: see record_errors), shutting_down (closed),
  // io_error (state offline; or the append's own error; or the apply failed after the append, which
  // takes the state offline).
  Status status;
  std::vector<RecordError> record_errors;
  storage::PartitionLog::AppendInfo appended;
  int32_t records = 0;  // records of the appended changelog batch (one per input record)
};

struct PrefixRow {
  std::string key;
  std::string value;
  int64_t offset = -1;
  int64_t timestamp = -1;
};

struct PrefixPage {
  std::vector<PrefixRow> rows;
  std::optional<std::string> next_cursor;  // the last returned key, when more rows match
};

struct LookupResult {
  bool found = false;
  std::string value;
  int64_t offset = -1;     // of the row's last change
  int64_t timestamp = -1;  // of the row's last change
};

// A point in the partition's past (LookupAsOf): a log offset, or a time in the records' own
// timestamps (CreateTime, or the broker's append time on a LogAppendTime topic).
struct AsOf {
  enum class Kind : uint8_t { timestamp, offset };
  Kind kind = Kind::timestamp;
  int64_t at = 0;
};

struct AsOfResult {
  bool found = false;
  std::string value;
  int64_t offset = -1;     // of the change that made the row (found)
  int64_t timestamp = -1;  // of that change (found)
  // The history no longer covers `at` (trimmed with the log's start): the earliest `at` of the
  // same kind it can answer for this partition.
  bool out_of_retention = false;
  int64_t earliest = -1;
  // The read stepped over its budget of newer changes before finding the point (not answered).
  bool truncated = false;
};

class PkState {
 public:
  struct Options {
    TableConfig table;
    int32_t partition = 0;
    int32_t partition_count = 1;
    // confluent tables: decodes writers' framed values (null: such a table refuses writes with
    // an error naming why; replay and reads need none).
    std::shared_ptr<const ConfluentDecoder> decoder;
    // Tests only: false makes close() behave like a crash (the memtable is dropped, not flushed).
    bool flush_on_close = true;
    // The TTL clock of reads (null = system clock) and how many checkpoints create_checkpoint()
    // keeps.
    Clock clock;
    int32_t checkpoints_retained = 2;
    // A replica of a replicated partition (cluster mode): the log's high watermark is set from
    // outside and is not known at open, so open() applies nothing past the persisted state and
    // checks the state against the log end instead; the state then catches up through lead() /
    // follow() and apply_committed() (see "Replication" below).
    bool replicated = false;
  };

  // Opens (creating) `<log.dir()>/kv`, then replays the log past the applied offset. A state
  // ahead of the log end or behind its start is first replaced by the newest checkpoint inside the
  // log (or rebuilt from a log starting at 0); otherwise Errc::corruption ("partition offline").
  static Result<std::unique_ptr<PkState>> open(PkEnvironment& env, storage::PartitionLog& log,
                                               Options options);
  ~PkState();
  PkState(const PkState&) = delete;
  PkState& operator=(const PkState&) = delete;

  // Flushes the memtable (the listener fsyncs the log first) and closes RocksDB. Idempotent. New
  // reads fail with Errc::shutting_down from the moment it starts; it waits for a running write,
  // running reads and a running create_checkpoint()/compact(), so never call it under a
  // broker-wide lock. Held (unapplied) batches are dropped: they are in the log, and the next
  // open() replays them.
  Status close();

  // The leader's produce path: compute -> size check -> append -> apply (see the file comment).
  // `now_ms` is the append time TTL tables stamp into each record and row. Rejections leave the
  // state, the overlay and the log untouched.
  WriteResult write(const WriteInput& input, int64_t now_ms, const AppendFn& append);
  // Applies every held batch whose last offset is <= `offset`, oldest first.
  Status apply_at(int64_t offset);
  // Applies the after-images of a changelog batch as stored in the log (its records at
  // `base_offset` + offset delta; `none` records skipped; a delete or null value removes the row),
  // together with the applied offset, in one RocksDB write. Records at or below the applied
  // offset are skipped, so applying a batch twice changes nothing. Not while batches are held.
  Status apply_changelog(const protocol::RecordBatchView& batch, int64_t base_offset);
  // Batches computed but not applied (held, or a write in flight; not open transactions').
  size_t overlay_size() const;

  // --- Transactions (pk_txn.cc) ---
  // Ends `producer_id`'s transaction on this partition: `append` writes the marker
  // (PartitionLog::append_marker); once it is appended (producer_check ok) a COMMIT applies the
  // transaction's rows, each at its own record's offset, and an ABORT drops them, in the same
  // write-mutex hold (no write computes between the marker and the state change). A marker for a
  // producer with nothing held here only advances the applied offset. A replicated leader
  // releases the transaction's keys at once but holds the decision as one overlay batch at the
  // marker's offset (later writes compute on top of the committed rows), applied as the high
  // watermark passes the marker; a follower meets the marker in the log it replays.
  using MarkerAppendFn = std::function<Result<storage::PartitionLog::AppendInfo>()>;
  Result<storage::PartitionLog::AppendInfo> end_transaction(int64_t producer_id, bool commit,
                                                            const MarkerAppendFn& append);
  // Open transactions holding rows here, and how many keys they lock.
  size_t open_transactions() const;
  size_t locked_keys() const;

  // --- Replication (Options::replicated; pk_replay.cc) ---
  // Only committed data (at or below the high watermark) is ever applied, on every replica, so a
  // lookup never sees a write a failover could take back, and a follower's truncation after a
  // leader change (always above the high watermark) needs no rollback of the state.
  // This replica now leads: the log's records past the applied offset — written by an earlier
  // leader, not yet committed — are loaded into the overlay as held batches (after-images, never
  // re-computed), so writes compute on top of them; apply_committed() applies them as the high
  // watermark passes. Transactions are found again from the floor: their batches are held in
  // them (keys locked), markers past the applied offset decide them. Writes then go with
  // WriteInput::hold.
  Status lead();
  // This replica now follows: held batches and open transactions are dropped (the log may be
  // truncated under them; they are found again and applied from the log once committed).
  Status follow();
  // The high watermark moved to `hw`: a leader applies its held batches below it, a follower
  // applies the log's changelog batches up to it. A no-op when called from inside this state's own
  // write() (an RF=1 leader's high watermark moves within the append: the writer calls it again
  // once write() returned). Errc::corruption when the state is ahead of the log end (an unclean
  // truncation): the owner reopens it, which restores a checkpoint below the log end.
  Status apply_committed(int64_t hw);

  // Current rows (RocksDB only: applied writes; a produce is acknowledged after apply, so a
  // lookup after the acknowledgement sees it). Errc::io_error on a RocksDB failure. lookup_many()
  // of one key (tools and tests; the broker's handlers read in batches).
  Result<LookupResult> lookup(std::span<const uint8_t> key) const;
  // lookup() of many keys, answers in key order: the row cache probed for all keys together
  // (their memory fetched in parallel), the keys it does not hold read with one RocksDB MultiGet
  // (one view of the state, their blocks looked up together). Errors as lookup().
  Status lookup_many(std::span<const std::span<const uint8_t>> keys,
                     std::vector<LookupResult>& out) const;

  // --- History (table.history.enabled; pk_history.cc) ---
  // The key's row as of `at`: the newest change (in log order) at an offset <= at.at, or with a
  // timestamp <= at.at (a late record — one whose timestamp is older than an earlier change's —
  // is found at its own timestamp). Applied changes only, as lookup(). On a TTL table a row whose
  // TTL clock + ttl <= at.at is absent at that time. Errc::invalid_argument when the table keeps
  // no history. A time read steps back over the key's changes newer than the point: `steps`
  // (when given) bounds how many, across calls; past it the answer is `truncated`.
  Result<AsOfResult> lookup_as_of(std::span<const uint8_t> key, const AsOf& at,
                                  uint64_t* steps = nullptr) const;
  // Many lookup_as_of() reads on one RocksDB iterator: one consistent view of the history for
  // all of them, and one iterator's setup instead of one per key (most of a point read's cost).
  // Holds this state's read lock while it lives (close() waits): keep it for one request.
  class HistoryReader {
   public:
    HistoryReader(HistoryReader&&) noexcept;
    HistoryReader& operator=(HistoryReader&&) = delete;  // would drop the lock before the iterator
    ~HistoryReader();
    Result<AsOfResult> lookup(std::span<const uint8_t> key, const AsOf& at,
                              uint64_t* steps = nullptr);

   private:
    friend class PkState;
    HistoryReader(const PkState& state, std::shared_lock<std::shared_mutex> lock);
    const PkState* state_;
    std::shared_lock<std::shared_mutex> lock_;
    std::unique_ptr<rocksdb::Iterator> it_;
    int64_t horizon_ = 0;
    int64_t watermark_ = 0;
    std::string prefix_, start_;  // scratch, reused across keys
  };
  // Errc::invalid_argument without history, Errc::shutting_down when closed.
  Result<HistoryReader> history_reader() const;
  // Drops the changes below `horizon` (the log's start offset) but each key's newest one (a
  // delete's too), so every point from horizon - 1 on stays exact; points before it then answer
  // out_of_retention. A no-op unless `horizon` passed the last one. One caller at a time (its
  // own mutex; writes and reads go on). Returns the changes removed.
  Result<uint64_t> trim_history(int64_t horizon);
  // trim_history() to where the partition log starts now (the broker's maintenance loop).
  Result<uint64_t> trim_history_to_log_start();
  int64_t history_horizon() const { return hist_horizon_.load(std::memory_order_acquire); }

  // Up to `limit` rows whose key starts with `prefix`, in key order, strictly after `cursor` (the
  // previous page's next_cursor) when given. Reads one RocksDB snapshot per call.
  Result<PrefixPage> prefix_lookup(std::span<const uint8_t> prefix,
                                   std::optional<std::span<const uint8_t>> cursor,
                                   uint32_t limit) const;

  // Scan (pkindex/pk_scan.cc): pins a RocksDB snapshot and its log offset X (see pk_scan.h);
  // close() releases every live snapshot. scan() returns one page of the snapshot's rows (TTL-
  // expired rows skipped). Any thread.
  Result<std::shared_ptr<PkSnapshot>> open_snapshot();
  Result<ScanPage> scan(const PkSnapshot& snapshot, std::optional<std::span<const uint8_t>> after,
                        uint32_t limit, size_t max_bytes) const;
  size_t open_snapshots() const;

  // --- Checkpoints, retention bound, TTL (pk_checkpoint.cc, pk_ttl.h) ---
  // Log first: fsyncs the log, then makes a RocksDB checkpoint under
  // `<partition dir>/kv-checkpoints/<20-digit applied offset>/` (tmp dir + rename + dir fsync) and
  // drops all but the newest checkpoints_retained. No-op when nothing was applied since the newest.
  // One caller at a time (ckpt_mu_); close() waits for it; never call it on the produce path.
  Result<CheckpointInfo> create_checkpoint();
  // Never waits for a running checkpoint (own small mutex). Any thread.
  CheckpointInfo newest_checkpoint() const;
  std::vector<int64_t> checkpoint_offsets() const;  // ascending, on disk
  // Applied offset of the state persisted in SSTs (not the memtable).
  int64_t persisted_applied_offset() const { return persisted_applied_.load(); }
  // For PartitionLog::set_retention_bound: min(persisted applied + 1, newest checkpoint + 1, the
  // snapshot offset X of every live Scan snapshot, so ReadChangelog(X) keeps working while the scan
  // is open); 0 without a checkpoint.
  int64_t retention_bound() const;
  // The checkpoint open() restored from because the state was ahead of the log (-1: none).
  int64_t restored_from_checkpoint() const { return restored_from_; }
  // TTL: true when the table has a TTL and the row's clock + ttl <= now_ms.
  bool expired(const row_format::RowView& row, int64_t now_ms) const;
  // A stored row into a lookup's answer: false for an expired row (left not found), corruption
  // for one that does not decode. `now_ms` matters on TTL tables only.
  Result<bool> answer_row(std::string_view stored, int64_t now_ms, LookupResult& out) const;
  int64_t now_ms() const { return clock_(); }
  // Memtable flush + full compaction (runs the TTL filter). Tests and the test-fault hook.
  Status compact();

  // The partition that owns `key` under the table's partitioner.
  int32_t partition_for(std::span<const uint8_t> key) const;

  int64_t applied_offset() const { return applied_offset_.load(std::memory_order_acquire); }
  uint64_t estimate_rows() const;
  const Options& options() const { return options_; }
  const std::string& path() const { return path_; }
  // Memtable flush (tests; the listener fsyncs the log first).
  Status flush();
  // How many log fsyncs the flush listener made / how many failed.
  uint64_t log_syncs() const;
  uint64_t log_sync_failures() const;
  // A RocksDB integer property ("rocksdb.cur-size-all-mem-tables", ...); nullopt when unknown or
  // closed or closing. Metrics at scrape time (pk_state_props.cc); never blocks behind a
  // checkpoint or close(). Any thread.
  std::optional<uint64_t> int_property(const std::string& name) const;
  // Whether this partition holds one of the environment's memtable bloom filters
  // (PkEnvironment::take_memtable_bloom): its memtables made from now on have one.
  bool has_memtable_bloom() const { return bloom_held_.load(std::memory_order_relaxed); }
  // Memtable upkeep (pk_memtable.cc), off the write path (each step rewrites RocksDB's MANIFEST,
  // a filter's its OPTIONS too): a partition that has written PkEnvironment's
  // memtable_bloom_after_bytes in the current window of `idle_ms` takes a memtable bloom filter if
  // one is free and switches to a memtable that has it; one not written for `idle_ms` (steady
  // clock) flushes its memtable, so it holds no write buffer (RocksDB's write-buffer manager only
  // ever flushes the partition being written), and gives its filter back, as does one that wrote
  // less than that in a whole window. Cheap when there is nothing to do; after a failure, not
  // retried for kHealIntervalMs. A flush put off by a write stall (the partition's earlier
  // memtables are still being flushed) is `deferred`, no failure: the next upkeep tries again. The
  // broker's checkpoint thread calls it every tick; any thread. Also flushes a partition not
  // written for kPressureQuietMs whose memtable holds PkEnvironment::pressure_flush_floor() or more
  // while the environment's write buffers are pressed (`flushed_pressed`;
  // PkEnvironment::write_buffer_pressed), and then takes no filter.
  enum class MemtableStep { none, took_bloom, flushed_idle, flushed_pressed, deferred };
  static constexpr int64_t kPressureQuietMs = 1000;
  Result<MemtableStep> tend_memtable(int64_t now_ms, int64_t idle_ms);
  static int64_t steady_ms();

 private:
  // Turns off RocksDB's per-thread perf context for the calling thread (see pk_state.cc).
  static void quiet_perf_context();

  struct Computed {
    Status status;
    std::vector<RecordError> record_errors;
    std::vector<uint8_t> batch;  // the output batch (status ok)
    uint64_t id = 0;             // its overlay entry (status ok)
  };
  class FlushListener;

  PkState(storage::PartitionLog& log, Options options);
  Status replay();
  // Where the log ends for the state's checks: the high watermark on one node, the log end on a
  // replica (its high watermark is unknown at open).
  int64_t log_end_for_state() const;
  // write_mu_ held: applies the log's changelog batches in [applied + 1, end).
  Status replay_range_locked(int64_t end);
  Status apply_changelog_locked(const protocol::RecordBatchView& batch, int64_t base_offset);
  // write_mu_ held: a stored changelog batch as a held, appended batch of `target`.
  Status hold_changelog_locked(const protocol::RecordBatchView& batch, int64_t base_offset,
                               Overlay& target);
  // write_mu_ held: one stored batch during replay: markers end their transaction (or only drop it
  // when at or below the applied offset: decided before), transactional batches are held in their
  // transaction, others applied.
  Status replay_batch_locked(const protocol::RecordBatchView& batch);
  // Calls `fn(batch)` for every whole batch of the log in [from, end) (file reads, batch by batch).
  Status for_each_log_batch(int64_t from, int64_t end,
                            const std::function<Status(const protocol::RecordBatchView&)>& fn);
  // An open transaction: its appended batches (rows not in RocksDB), oldest first.
  struct OpenTxn {
    int64_t first_offset = -1;  // of its first appended batch
    Overlay batches;
  };
  // write_mu_ held: the output batch of `in`, pushed onto `target` (unappended). `txn`: the
  // transaction it belongs to (its rows are read before the committed ones; keys locked by any
  // other transaction refuse the batch with Errc::busy), null for a plain batch (refused on any
  // locked key).
  Computed compute(const WriteInput& input, int64_t now_ms, Overlay& target, const OpenTxn* txn);
  // write_mu_ held: applies (commit) or drops the open transaction of `producer_id`, releasing its
  // locks, with the applied offset = `marker_offset`.
  Status end_txn_locked(int64_t producer_id, bool commit, int64_t marker_offset);
  // write_mu_ held: registers an appended batch of `txn` (first offset, key locks).
  void hold_in_txn_locked(int64_t producer_id, OpenTxn& txn, int64_t base_offset);
  // Releases the key locks `txn` holds (those another producer took since are left alone).
  void release_locks_locked(int64_t producer_id, const OpenTxn& txn);
  // write_mu_ held, replicated leader: the marker at `marker_offset` decided `producer_id`'s
  // transaction: its keys are released and (COMMIT) its rows pushed onto the overlay as one
  // batch at the marker's offset; an ABORT or a producer with nothing held pushes an empty one.
  Status decide_held_txn_locked(int64_t producer_id, bool commit, int64_t marker_offset);
  // write_mu_ held, replicated leader: one stored batch past the applied offset held as the
  // leader holds its own writes (a transaction's batch in the transaction, a marker decided).
  Status hold_batch_locked(const protocol::RecordBatchView& batch);
  // write_mu_ held: forgets the overlay and every open transaction (a failed apply, close).
  void clear_pending_locked();
  // The first offset of the oldest open transaction (INT64_MAX: none).
  int64_t open_txn_floor_locked() const;
  // write_mu_ held: the oldest overlay batch (appended) into RocksDB.
  Status apply_front();
  // A change's history entry into `wb` (history tables; `encoded` empty = a delete).
  void put_history(rocksdb::WriteBatch& wb, std::string_view row_key, std::string_view encoded,
                   int64_t timestamp, int64_t offset) const;
  Status load_history_meta();  // the horizon and watermark from RocksDB (open)
  // The indexes 0..n-1 of a batch's changes ordered by RocksDB key (`key_of(i)`), records of one
  // key in record order. With the memtable's insert hints (open_db) each insert's skiplist search
  // starts from the previous insert of the same key range, so a batch in key order walks only the
  // levels spanning the gap to its predecessor instead of the whole list per key
  // (docs/benchmarks.md, pk-apply). Equal keys keep record order: the later change gets the
  // higher sequence number and wins, as in the log.
  template <typename KeyOf>
  static std::vector<uint32_t> in_key_order(size_t n, KeyOf key_of) {
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return key_of(a) < key_of(b); });
    return order;
  }
  std::mutex trim_mu_;  // one trim_history() at a time
  std::atomic<int64_t> hist_horizon_{0};
  std::atomic<int64_t> hist_watermark_{std::numeric_limits<int64_t>::min()};
  // write_mu_ held, db_mu_ shared: one RocksDB write of rows + the applied offset.
  Status write_applied(rocksdb::WriteBatch& wb, int64_t applied);
  // After a write of `bytes` to RocksDB (tend_memtable's counters).
  void note_memtable_write(size_t bytes);
  // write_mu_ and db_mu_ shared held (tend_memtable): false when a write stall put it off.
  Result<bool> flush_idle_locked();
  Status take_bloom_locked();
  Status set_bloom_ratio_locked(double ratio);  // memtables made from now on
  std::atomic<bool> bloom_held_{false};  // changed under write_mu_; read by open_db and metrics
  std::atomic<size_t> written_since_idle_{0};     // bytes, in tend_memtable's current window
  std::atomic<int64_t> last_write_ms_{0};         // steady_ms() of the last write
  std::atomic<bool> written_since_flush_{false};  // since the last idle flush
  std::atomic<int64_t> window_start_ms_{0};       // tend_memtable's current window (from open)
  std::atomic<int64_t> upkeep_retry_ms_{0};       // after a failed upkeep: not before this
  // The key's row as of `building`, `own` (a transaction's rows, newest first), the overlay
  // (newest first), then RocksDB.
  Result<std::optional<Overlay::Row>> current(const std::string& db_key,
                                              const Overlay::Batch& building, const Overlay* own);

  storage::PartitionLog& log_;
  PkEnvironment* env_ = nullptr;  // set by open(); outlives this state
  Options options_;
  std::unique_ptr<Merger> merger_;
  std::string path_;
  std::shared_ptr<FlushListener> listener_;
  std::unique_ptr<rocksdb::DB> db_;  // written by open and close() only (db_mu_ exclusive)
  // This RocksDB instance's id in the environment's row cache (row_cache.h): new whenever the
  // rows change other than through write_applied (open, restore, wipe), so no entry outlives it.
  std::atomic<uint64_t> cache_owner_{0};
  // Readers of db_ hold db_mu_ shared (read_lock()); close() sets closing_ first (so new readers
  // fail fast and cannot starve it) and then takes db_mu_ exclusively.
  mutable std::shared_mutex db_mu_;
  std::atomic<bool> closing_{false};
  // A shared lock on db_mu_ with db_ open, or an empty lock (closed / closing).
  std::shared_lock<std::shared_mutex> read_lock() const;
  std::shared_ptr<SnapshotRegistry> snapshots_;  // Scan snapshots (pk_scan.cc)
  // Durability (pk_checkpoint.cc).
  Status open_db(PkEnvironment& env);
  Status recover_ahead_of_log(PkEnvironment& env);  // state past the log end / before its start
  Status load_checkpoints();
  Status load_txn_floor();  // txn_floor_ from RocksDB (pk_txn.cc)
  Clock clock_;
  std::unique_ptr<TtlCompactionFilter> ttl_filter_;
  std::mutex ckpt_mu_;            // one create_checkpoint() at a time
  mutable std::mutex newest_mu_;  // guards newest_ (held briefly, never across I/O)
  CheckpointInfo newest_;
  std::atomic<int64_t> newest_ckpt_offset_{-1};
  std::atomic<int64_t> persisted_applied_{-1};
  int64_t restored_from_ = -1;
  // Marks the current thread as inside this state's write() (apply_committed() from a listener
  // running within the write's own append must not wait for the write mutex it holds).
  class WritingScope {
   public:
    explicit WritingScope(const PkState* s);
    ~WritingScope();

   private:
    const PkState* previous_;
  };
  mutable std::mutex write_mu_;
  Overlay overlay_;  // guarded by write_mu_
  // Open transactions by producer id and the row keys they hold (guarded by write_mu_).
  std::map<int64_t, OpenTxn> txns_;
  std::unordered_map<std::string, int64_t> txn_locks_;
  // The oldest open transaction's first offset as last written next to the applied offset
  // (INT64_MAX: none): replay starts at min(it, applied + 1), so an open transaction's records
  // below the applied offset are found again (guarded by write_mu_).
  int64_t txn_floor_ = std::numeric_limits<int64_t>::max();
  // Replay has found every open transaction's records below this offset (a follower replays the
  // log in steps: the next step starts here, not at the floor again); -1 when the open
  // transactions must be found again from the floor (after open, lead(), follow(), a failure).
  int64_t txns_through_ = -1;
  bool leading_ = false;  // replicated: lead() ran and no follow() since (guarded by write_mu_)
  std::atomic<int64_t> applied_offset_{-1};
  bool failed_ =
      false;  // an apply failed: the state no longer matches the log (guarded by write_mu_)
  // Requires write_mu_, with failed_ set: brings the state back (RocksDB resumed, what it missed
  // replayed from the log) or says why not; at most one attempt per kHealIntervalMs.
  Status heal_locked();
  static constexpr int64_t kHealIntervalMs = 1000;
  int64_t last_heal_ms_ = 0;  // steady clock (guarded by write_mu_)
};

}  // namespace strata::pkindex
