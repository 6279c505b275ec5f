// PkState: the current rows of one primary-key table partition, in a RocksDB instance under
// `<partition dir>/kv/`, kept in step with the partition log (the changelog).
//
// Write path (caller holds lock_writes() across all three steps, so batches of one partition are
// computed, appended and applied in log order):
//   compute(input batch)  -> the output batch to append: one record per input record at the same
//                            offset delta, value = row after, headers strata.change (+ strata.before
//                            in full mode); the batch's effect is kept in an overlay of
//                            appended-but-unapplied batches so a later compute sees it
//   append (the caller, PartitionLog::append)
//   apply(id, base offset) -> rows + applied offset in one RocksDB WriteBatch (RocksDB WAL off)
//   rollback(id)           -> the append failed: the overlay entry (and any later one) is dropped
// Log first, state second: an EventListener fsyncs the partition log (PartitionLog::flush) when a
// memtable flush begins, so RocksDB never persists state for offsets the log has not made durable.
// open() replays the log from the persisted applied offset using the stored after-images (never
// re-running the merge engine).
//
// Owned by the broker's PkTables service (or a test); the PartitionLog and PkEnvironment must
// outlive it. Thread-safety: compute/apply/rollback need lock_writes(); lookups, scans,
// applied_offset(), estimates, properties and checkpoint info may run concurrently on any thread,
// also concurrently with close(): every RocksDB read holds db_mu_ shared, close() takes it
// exclusively, and reads after (or during) close() fail with Errc::shutting_down.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkindex/merge_engine.h"
#include "pkindex/pk_environment.h"
#include "pkindex/pk_ttl.h"
#include "pkindex/row_format.h"
#include "pkindex/table_config.h"
#include "protocol/base/result.h"
#include "protocol/codec/compression.h"
#include "protocol/record/record_batch.h"

namespace rocksdb {
class DB;
}  // namespace rocksdb

namespace strata::storage {
class PartitionLog;
}  // namespace strata::storage

namespace strata::pkindex {

class PkSnapshot;           // pkindex/pk_scan.h (Scan, engineer H1)
struct SnapshotRegistry;    // pkindex/pk_scan.h
struct ScanPage;            // pkindex/pk_scan.h

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

struct ComputeResult {
  // ok; invalid_argument (bad records: see record_errors -> INVALID_RECORD); corruption (the batch
  // cannot be decoded).
  Status status;
  std::vector<RecordError> record_errors;
  std::vector<uint8_t> batch;  // the output batch (status ok)
  uint64_t pending_id = 0;     // for apply()/rollback() (status ok)
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

class PkState {
 public:
  struct Options {
    TableConfig table;
    int32_t partition = 0;
    int32_t partition_count = 1;
    // Tests only: false makes close() behave like a crash (the memtable is dropped, not flushed).
    bool flush_on_close = true;
    // Issue 5 durability (H2): the TTL/broker clock (null = system clock) and how many checkpoints
    // create_checkpoint() keeps.
    Clock clock;
    int32_t checkpoints_retained = 2;
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
  // reads fail with Errc::shutting_down from the moment it starts; it waits for running reads and
  // a running create_checkpoint()/compact(), so never call it under a broker-wide lock.
  Status close();

  std::unique_lock<std::mutex> lock_writes() { return std::unique_lock(write_mu_); }

  // `input` is a validated v2 batch (CRC checked; LogAppendTime already stamped if the topic uses
  // it). The output is encoded with `codec`. Rejections leave the state and overlay untouched.
  ComputeResult compute(const protocol::RecordBatchView& input, codec::Compression codec);
  // The output batch of `pending_id` was appended at `base_offset`.
  Status apply(uint64_t pending_id, int64_t base_offset);
  // The append of `pending_id` failed: drop it and every later overlay entry.
  void rollback(uint64_t pending_id);
  size_t overlay_size() const { return overlay_.size(); }

  // Current rows (RocksDB only: applied writes; a produce is acknowledged after apply, so a
  // lookup after the acknowledgement sees it). Errc::io_error on a RocksDB failure.
  Result<LookupResult> lookup(std::span<const uint8_t> key) const;

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

  // --- Checkpoints, retention bound, TTL (issue 5, H2: pk_checkpoint.cc, pk_ttl.h) ---
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
  // closed or closing. Metrics at scrape time (pk_state_props.cc, issue 6); never blocks behind a
  // checkpoint or close(). Any thread.
  std::optional<uint64_t> int_property(const std::string& name) const;

 private:
  struct OverlayRow {
    bool present = false;
    std::string value;
    std::optional<int64_t> version;
    int64_t ttl_clock = -1;  // H2: the row's TTL clock (its append time)
  };
  struct Op {
    std::string key;      // RocksDB key
    std::string encoded;  // row value (offset patched at apply); empty = delete
    int32_t offset_delta;
  };
  struct Pending {
    uint64_t id;
    int32_t last_offset_delta;
    std::unordered_map<std::string, OverlayRow> rows;  // by RocksDB key: state after this batch
    std::vector<Op> ops;
  };
  class FlushListener;

  PkState(storage::PartitionLog& log, Options options);
  Status replay();
  // The key's row as of the overlay (newest first) then RocksDB. Fills `scratch`.
  Result<std::optional<OverlayRow>> current(const std::string& db_key, const Pending& building);

  storage::PartitionLog& log_;
  Options options_;
  std::unique_ptr<Merger> merger_;
  std::string path_;
  std::shared_ptr<FlushListener> listener_;
  std::unique_ptr<rocksdb::DB> db_;  // written by open and close() only (db_mu_ exclusive)
  // Readers of db_ hold db_mu_ shared (read_lock()); close() sets closing_ first (so new readers
  // fail fast and cannot starve it) and then takes db_mu_ exclusively.
  mutable std::shared_mutex db_mu_;
  std::atomic<bool> closing_{false};
  // A shared lock on db_mu_ with db_ open, or an empty lock (closed / closing).
  std::shared_lock<std::shared_mutex> read_lock() const;
  std::shared_ptr<SnapshotRegistry> snapshots_;  // Scan snapshots (pk_scan.cc)
  // Issue 5 durability (H2; pk_checkpoint.cc).
  Status open_db(PkEnvironment& env);
  Status recover_ahead_of_log(PkEnvironment& env);  // state past the log end / before its start
  Status load_checkpoints();
  Clock clock_;
  std::unique_ptr<TtlCompactionFilter> ttl_filter_;
  std::mutex ckpt_mu_;           // one create_checkpoint() at a time
  mutable std::mutex newest_mu_;  // guards newest_ (held briefly, never across I/O)
  CheckpointInfo newest_;
  std::atomic<int64_t> newest_ckpt_offset_{-1};
  std::atomic<int64_t> persisted_applied_{-1};
  int64_t restored_from_ = -1;
  std::mutex write_mu_;
  std::deque<Pending> overlay_;  // guarded by write_mu_ (held by the caller)
  uint64_t next_pending_id_ = 1;
  std::atomic<int64_t> applied_offset_{-1};
  bool failed_ = false;  // an apply failed: the state no longer matches the log (guarded by write_mu_)
};

}  // namespace strata::pkindex
