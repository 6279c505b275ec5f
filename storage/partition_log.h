// PartitionLog: the durable, segmented log of one topic partition, in Kafka's on-disk layout
// (see file_names.h). Assigns offsets on append by rewriting each batch's baseOffset in place and
// stamps the current leader epoch; serves reads as file ranges of whole batches (zero-copy
// friendly); rolls segments; applies the flush policy; recovers a torn tail at open; keeps the
// leader-epoch history. Log end offset, durable end offset and high watermark are separate fields
// (all equal on one node after every append). A replica of a replicated partition also appends
// the leader's batches as they are, truncates and resets, and takes its epochs and high watermark
// from outside (see "Replication" below).
//
// Owned by LogManager (shared_ptr; a handle stays valid after the topic is deleted, appends then
// fail). Thread-safety: internally synchronised. Appends, flushes and close() are serialised by a
// mutex; reads and queries may run concurrently on any thread and only ever see batches published
// after their write completed (bytes below the published log end offset).
//
// Durability: a batch is durable once flush() (or the flush policy) has fsynced it. When the flush
// policy asks for a flush at an append (flush.messages reached), the append fsyncs BEFORE the batch
// becomes readable and before the high watermark moves, and a failed fsync cuts the batch back out
// and returns the error, so what a consumer can read (and commit) is what the ack promised.
// Segments other than the active one are always fsynced (at roll). After an unclean shutdown,
// open() validates every batch of the segments at or after the persisted recovery point (in
// practice the active segment) and truncates a torn tail; after close() (clean) it trusts the
// files.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/result.h"
#include "storage/batch_summary.h"
#include "storage/env.h"
#include "storage/leader_epoch_cache.h"
#include "storage/log_config.h"
#include "storage/producer_state.h"
#include "storage/segment.h"
#include "storage/txn_index.h"

namespace strata::storage {

class PartitionLog {
 public:
  struct AppendInfo {
    int64_t base_offset = -1;
    int64_t last_offset = -1;
    int32_t leader_epoch = -1;
    // Idempotent-producer verdict (storage/producer_state.h): ok = appended; duplicate = a retry of
    // an earlier batch, NOT appended, base/last_offset are the original's; out_of_order /
    // stale_epoch = rejected, nothing appended, producer_message says why.
    ProducerCheck producer_check = ProducerCheck::ok;
    int64_t duplicate_timestamp = -1;
    std::string producer_message;
  };
  struct FileRange {
    std::shared_ptr<RandomAccessFile> file;
    uint64_t position;
    uint32_t size;
  };
  struct ReadResult {
    std::vector<FileRange> ranges;
    uint32_t total_bytes = 0;
  };

  // Opens (creating if missing) the partition directory `dir`, recovering it if the last shutdown
  // was not clean, then (one node) bumps the leader epoch and records it in
  // leader-epoch-checkpoint; a replicated log (LogConfig::replicated) keeps its epoch history.
  static Result<std::unique_ptr<PartitionLog>> open(Env* env, std::string dir, LogConfig config,
                                                    int64_t now_ms);
  // Does not flush: dropping a log without close() behaves like a crash (tests rely on it).
  ~PartitionLog();

  // `batch` is ONE validated v2 batch (the caller checked CRC and sizes). Rewrites baseOffset and
  // partitionLeaderEpoch in place, rolls if needed, writes it, fsyncs it if the flush policy says
  // so (flush.messages reached), then updates the indexes and advances the log end offset, the
  // durable end offset and the high watermark. A failed roll, write or fsync returns the error
  // with none of them moved and the batch never readable (partial bytes are cut off again). By
  // class (env.h): Errc::unavailable (out of descriptors or memory) is retried a few times within
  // the call; it and Errc::no_space (disk or quota full) leave the log writable, so an append
  // after the shortage ended succeeds; any other error (a failed fsync above all) takes the log
  // offline (later appends fail with Errc::io_error) until the next open recovers it.
  Result<AppendInfo> append(std::span<uint8_t> batch, int64_t now_ms);
  // Tries of an operation failing with Errc::unavailable within one append (roll, write), the
  // first pause between them (doubling: at most 7 ms in all, under the append lock).
  static constexpr int kTransientAttempts = 4;
  static constexpr std::chrono::milliseconds kTransientBackoff{1};

  // Whole batches starting with the one containing `offset`, stopping before `max_bytes` would be
  // exceeded (but at least one batch if `min_one`), and never including a batch whose last offset
  // is >= `upper_bound` (pass the high watermark). offset == bound -> empty. offset outside
  // [log_start_offset, log_end_offset] -> Errc::out_of_range. May span segments.
  Result<ReadResult> read(int64_t offset, uint32_t max_bytes, bool min_one,
                          int64_t upper_bound) const;

  int64_t log_start_offset() const { return log_start_offset_.load(std::memory_order_acquire); }
  int64_t log_end_offset() const { return log_end_offset_.load(std::memory_order_acquire); }
  // Where the acknowledged, readable log ends: the log end offset, except that an append whose
  // flush policy requires an fsync only moves it once the fsync succeeded. With the default policy
  // (never flush on append) acks mean "in the page cache", as in Kafka, and this equals the log
  // end.
  int64_t durable_end_offset() const { return durable_end_offset_.load(std::memory_order_acquire); }
  // One node: the durable end offset (published by publish_high_watermark()). Replicated mode:
  // what advance_high_watermark() set (the log start at open), never past the durable end.
  int64_t high_watermark() const { return high_watermark_.load(std::memory_order_acquire); }
  int64_t size_bytes() const;
  int32_t leader_epoch() const { return leader_epoch_.load(std::memory_order_acquire); }

  // First record (below the high watermark) whose timestamp >= ts, searched inside batches.
  Result<std::optional<TimestampAndOffset>> offset_for_timestamp(int64_t ts) const;
  // The first record carrying the largest timestamp in the log.
  Result<std::optional<TimestampAndOffset>> max_timestamp() const;
  std::optional<int32_t> epoch_for_offset(int64_t offset) const;
  // Kafka's OffsetsForLeaderEpoch answer: {epoch, end offset}; {-1, -1} when unknown.
  std::pair<int32_t, int64_t> end_offset_for_epoch(int32_t epoch) const;

  // fsyncs everything up to the log end; advances the (in-memory) recovery point.
  Status flush();
  // log.flush.interval.ms: flushes when unflushed data is older than the interval.
  Status flush_if_due(int64_t now_ms);
  // Writes the active segment's pages to the device (RandomAccessFile::write_back) once
  // `min_bytes` more have been appended to it since the last time: the fsync a roll makes on the
  // appending thread (sealing the old segment) then finds little left to write, instead of up to
  // a whole segment's worth (seconds at log.segment.bytes 1 GiB, with every connection of that
  // thread waiting). Makes no durability claim. Called by one thread (LogManager's write-back).
  Status write_back_ahead(uint64_t min_bytes);
  // Bytes of the active segment written back so far (introspection, tests).
  uint64_t written_back_bytes() const { return written_back_size_.load(std::memory_order_relaxed); }
  // Flush, seal the active segment, persist the recovery point and the clean-shutdown marker.
  // Later appends fail with Errc::shutting_down; reads keep working.
  Status close();

  // The topic was deleted: later appends fail with Errc::not_found; nothing more is written.
  void mark_deleted();

  // --- Replication (storage/partition_log_replica.cc; guarantees in docs/storage.md) ---
  // Every call here is serialised with appends and background maintenance; a failed file
  // operation part-way takes the log offline (the next open recovers a prefix of the old log).
  //
  // Follower append: one or more whole v2 batches exactly as the leader stored them. All are
  // validated first (sizes, magic 2, CRC-32C, lastOffsetDelta >= 0; Errc::corruption, nothing
  // written); the first must start exactly at the log end and each later one after the previous
  // one's last offset (offset gaps between batches are accepted, as Kafka's follower does: the
  // cleaner leaves them in compacted logs); else Errc::invalid_argument. Each batch is written
  // byte for byte (offsets, partitionLeaderEpoch, timestamps and CRC kept), under the leader's
  // flush policy and roll rules; a batch with a partitionLeaderEpoch above the latest known one
  // starts that epoch at its base offset (checkpoint rewritten before the batch is written), and
  // producer state takes each batch without duplicate or sequence checks. A failure at a later
  // batch leaves the earlier ones appended. Moves the log end and the durable end, never the
  // high watermark in replicated mode. Returns the new log end.
  Result<int64_t> append_as_follower(std::span<const uint8_t> batches, int64_t now_ms);
  // Drops every record at or above `offset`; the new log end is the end of the last batch kept:
  // `offset` itself at a batch boundary, else rounded DOWN to the base of the batch containing
  // `offset` (or to the end of the batch before an offset gap). offset >= log end: no record
  // goes, only epoch entries starting at the log end (no batch of them exists). Refuses
  // (Errc::invalid_argument) a new log end below the log start (use reset_to): the log start never
  // moves. Later segments are deleted, the containing one is cut and its indexes rebuilt, epoch
  // entries starting at or above the new end removed, producer state rebuilt from the newest
  // snapshot at or below it plus a header replay, the recovery point, durable end and high
  // watermark clamped; all of it fsynced before returning.
  Status truncate_to(int64_t offset);
  // Drops everything and continues empty at `offset`: log start = log end = durable end = high
  // watermark = offset, empty epoch history and producer state. The one call that may move the
  // log start backwards (the log is empty then). Durable before returning.
  Status reset_to(int64_t offset);
  // Leader of `epoch` from the log end on: the epoch history gets (epoch, log end) (unchanged if
  // `epoch` is already the latest) and append() stamps `epoch`. An epoch below the latest known
  // one is refused (Errc::invalid_argument). In replicated mode append() is refused until this is
  // called, and append_as_follower / truncate_to / reset_to end the leadership again.
  Status become_leader(int32_t epoch);
  // Replicated mode: moves the high watermark to min(hw, durable end) if that is above it (never
  // backwards) and fires the high-watermark listener. One node: no-op (the log publishes its
  // durable end itself). Returns the high watermark after the call.
  int64_t advance_high_watermark(int64_t hw);
  // Replicated mode: advance_high_watermark() was called since the log opened (its leader or a
  // fetch response named the high watermark); until then high_watermark() is the log start, a
  // placeholder, not what is committed.
  bool high_watermark_known() const { return hw_known_.load(std::memory_order_acquire); }
  bool replicated() const { return replicated_; }
  // The largest epoch in the history (the latest batch's, or the one become_leader recorded);
  // -1 when the history is empty.
  int32_t latest_epoch() const;

  // Progress notifications, called on the appending thread after the append released its locks:
  // `log_end` when the log end offset advanced (what a follower's fetch waits for),
  // `high_watermark` when the high watermark advanced (what consumers and ReadChangelog wait for).
  // On one node both move together at each successful append and neither fires for a failed one.
  // Either may be empty.
  struct Listeners {
    std::function<void(const PartitionLog&, int64_t)> log_end;
    std::function<void(const PartitionLog&, int64_t)> high_watermark;
  };
  // Set once, before the log is shared with appending threads (LogManager does it at open).
  void set_listeners(std::shared_ptr<const Listeners> listeners) {
    listeners_ = std::move(listeners);
  }

  // --- Batch summaries (storage/partition_log_summaries.cc, batch_summary.h) ---
  // From now on every data batch appended (as leader or follower) gets the summarizer's payload
  // in its segment's `.stats` side index; null stops it. May be set at any time (a PK state opens
  // lazily): earlier batches simply have none.
  // Setting one summarises the active segment's batches after its last summarised one (a crash
  // may have lost the tail of its .stats): up to a segment of work, under the append lock.
  void set_batch_summarizer(std::shared_ptr<const BatchSummarizer> summarizer);
  bool has_batch_summarizer() const {
    std::lock_guard lk(append_mu_);
    return summarizer_ != nullptr;
  }
  // The summaries of the segment holding `offset`, of the batches with a last offset in
  // [offset, upper_bound), by base offset, unchecked (check_batch_summary before use); entries
  // empty when the segment has none (or too many to read: too_large). offset outside
  // [log_start_offset, log_end_offset) -> Errc::out_of_range.
  Result<SegmentSummaries> batch_summaries(int64_t offset, int64_t upper_bound) const;

  // --- Idempotent producers (storage/partition_log_producers.cc) ---
  // Drops producers idle for expiration_ms (producer.id.expiration.ms). Returns how many.
  size_t expire_producers(int64_t now_ms, int64_t expiration_ms);
  // A copy of one producer's state (tests, tools); nullopt if unknown.
  std::optional<ProducerEntry> producer_state(int64_t producer_id) const;
  // A copy of every producer's state, by producer id (DescribeProducers).
  std::vector<ProducerEntry> producer_states() const;
  // Offset of the producer snapshot loaded at open (nullopt: none, the whole log was scanned) and
  // how many batches were replayed after it.
  std::optional<int64_t> producer_snapshot_at_open() const { return producer_snapshot_at_open_; }
  int64_t producer_batches_replayed_at_open() const { return producer_batches_replayed_; }

  // --- Transactions (storage/partition_log_producers.cc; docs/transactions.md) ---
  // Appends a COMMIT or ABORT marker for `producer_id` at `epoch`: one control batch in Kafka's
  // format (control + transactional attributes; key version 0 + type 0 = ABORT / 1 = COMMIT,
  // value version 0 + coordinator_epoch). An epoch below the producer's current one is refused
  // with producer_check = stale_epoch, a coordinator epoch below the one of the producer's last
  // marker with fenced_coordinator (nothing written); otherwise the producer takes `epoch` and
  // `coordinator_epoch` and its open transaction (if any) ends. An ABORT records (producer, first
  // offset, marker offset, LSO) in the active segment's .txnindex, fsynced before returning; a
  // failed index write takes the log offline (the next open re-derives the entry from the log).
  // Errors as append().
  Result<AppendInfo> append_marker(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                                   bool commit, int64_t now_ms);
  // min(first offset of any open transaction, high watermark): read_committed consumers read
  // below it. Equals the high watermark when no transaction is open.
  int64_t last_stable_offset() const {
    return std::min(first_unstable_offset_.load(std::memory_order_acquire), high_watermark());
  }
  // The aborted transactions a read_committed Fetch of [fetch_offset, upper_bound) must carry:
  // every entry with last_offset >= fetch_offset and first_offset < upper_bound, in marker order.
  std::vector<AbortedTxn> aborted_transactions(int64_t fetch_offset, int64_t upper_bound) const;

  // --- Admin hooks (contract in docs/retention.md) ---
  // The owner's bound: records at offsets < bound() may be removed (retention, cleaner,
  // DeleteRecords). Unset (plain topics) = INT64_MAX. May be set at any time (a PK state opens
  // lazily); `bound` runs under an internal mutex, so it must not call back into this log.
  void set_retention_bound(std::function<int64_t()> bound) {
    std::lock_guard<std::mutex> lock(bound_mu_);
    retention_bound_ = std::move(bound);
  }
  int64_t retention_bound() const;
  // DeleteRecords: moves the log start offset to min(offset, retention_bound()) (never backwards)
  // and persists it (log-start-offset file); returns the new log start offset.
  // offset < 0 or > high_watermark() -> Errc::out_of_range, nothing changed.
  Result<int64_t> delete_records_before(int64_t offset);
  // Moves the log start offset forward to `offset` (<= log end) and persists it; no bound check.
  Status advance_log_start_offset(int64_t offset);
  // Dynamic topic configs: takes effect at the next append / roll / flush check.
  void set_config(const LogConfig& config);
  LogConfig config() const;

  // Introspection (tests, metrics, tools).
  const std::string& dir() const { return dir_; }
  int64_t recovery_point() const;
  uint64_t truncated_bytes_at_open() const { return truncated_bytes_at_open_; }
  bool recovered_at_open() const { return recovered_at_open_; }
  std::vector<int64_t> segment_base_offsets() const;

 private:
  // Background maintenance (storage/retention.cc, storage/log_cleaner.cc) works on the
  // segment list directly, serialised per log by maintenance_mu_.
  friend class Retention;
  friend class LogCleaner;

  PartitionLog(Env* env, std::string dir, LogConfig config)
      : env_(env), dir_(std::move(dir)), replicated_(config.replicated), config_(config) {}

  Status load_segments(int64_t now_ms);
  // Seals the active segment and starts one at `new_base_offset`. Errc::unavailable is retried
  // (kTransientAttempts in all, backing off from kTransientBackoff); an unavailable or no_space
  // error that remains is returned with the log still writable (a sealed active segment makes the
  // next append finish the roll); any other error takes the log offline (failed_).
  Status roll(int64_t new_base_offset);
  Status roll_step(int64_t new_base_offset);
  // After a failed attempt: sleeps and returns true when `st` is transient (Errc::unavailable)
  // and attempts remain.
  static bool transient_retry_due(const Status& st, int attempt);

  // The shared tail of append() and append_as_follower(): rolls if needed, writes `batch` (its
  // header already final), fsyncs it when the flush policy is due, commits it to the segment and
  // moves the log end and the durable end. Failures as documented at append(). Append lock held.
  Result<int64_t> write_batch_locked(std::span<const uint8_t> batch, int64_t base, int64_t last,
                                     int64_t max_timestamp, int32_t epoch, int32_t record_count,
                                     int64_t now_ms);
  // Errc for a log that takes no writes (deleted, closed, offline); Ok otherwise.
  Status writable_locked() const;
  // Replaces the table with the newest snapshot at or below `end` plus a header replay up to
  // `end`; returns the snapshot's offset. Append lock held.
  // Also re-derives the aborted-transaction index from the same replay (entries with a marker at
  // or after the snapshot), and rebuilds lost index files.
  Result<std::optional<int64_t>> load_producers_locked(int64_t end, int64_t* replayed);
  // Replays the batch headers (and control records) in [from, end) into `table`; ABORT markers
  // go to `aborted` (with the base of their segment). `replayed` counts producer data batches.
  // State lock held shared.
  Status replay_locked(int64_t from, int64_t end, ProducerStateTable& table,
                       std::vector<std::pair<int64_t, AbortedTxn>>* aborted,
                       int64_t* replayed) const;
  // After a replay from `from`: every segment's index = its file's entries below `from` plus
  // `replayed` (files missing below `from` are rebuilt by a replay from the log start), rewritten
  // where that differs from the file. Append lock held.
  Status rebuild_txn_index_locked(int64_t from, int64_t end,
                                  const std::vector<std::pair<int64_t, AbortedTxn>>& replayed);
  // Takes a data or control batch just written at `base` into the producer and transaction
  // state; an ABORT gets its .txnindex entry. Append lock held.
  Status track_batch_locked(std::span<const uint8_t> batch, int64_t base);
  // Publishes the first open transaction offset for last_stable_offset(). Append lock held.
  void publish_txn_state_locked();
  Status flush_locked();
  // Appends the summary of a batch just committed to `seg` (failures are logged and cost only
  // the summary). Append lock held.
  void summarize_locked(const std::shared_ptr<Segment>& seg, const BatchInfo& info,
                        std::span<const uint8_t> batch);
  // The active segment was sealed: its summaries are fsynced with it (best effort), so only the
  // active segment's can be lost in a crash. Append lock held.
  void seal_summaries_locked();
  // Summarises the active segment's batches past its last summarised one (a crash lost the tail
  // of its .stats, or they were written before the summarizer was set). Append lock held.
  void backfill_summaries_locked();
  // The only writer of high_watermark_ after open. One node: HW = the durable end offset; a
  // replicated log would pass the minimum durable end over the in-sync replicas instead. Never
  // moves the HW backwards; returns whether it advanced. Append lock held.
  bool publish_high_watermark(int64_t durable_end);
  Status write_recovery_point(int64_t offset);
  // The segment holding `offset` (last with base <= offset); state lock held.
  size_t segment_index_for(int64_t offset) const;

  Env* const env_;
  const std::string dir_;
  const bool replicated_;  // LogConfig::replicated at open
  LogConfig config_;       // guarded by append_mu_ (set_config)

  mutable std::mutex append_mu_;        // appends, rolls, flushes, close
  std::mutex maintenance_mu_;           // retention vs cleaner (taken before append_mu_)
  mutable std::shared_mutex state_mu_;  // segments_ and published segment state vs readers
  std::vector<std::shared_ptr<Segment>> segments_;
  // Batch summaries (append lock): the summarizer, and the open .stats file of one segment.
  std::shared_ptr<const BatchSummarizer> summarizer_;
  std::weak_ptr<Segment> summary_segment_;
  std::unique_ptr<WritableFile> summary_writer_;
  LeaderEpochCache epochs_;
  std::atomic<int64_t> log_start_offset_{0};
  std::atomic<int64_t> log_end_offset_{0};
  std::atomic<int64_t> durable_end_offset_{0};
  std::atomic<int64_t> high_watermark_{0};
  std::atomic<bool> hw_known_{false};     // advance_high_watermark() called (replicated mode)
  std::atomic<int32_t> leader_epoch_{0};  // stamped by append(); written under append_mu_
  // Replicated mode: become_leader() ran and no follower operation since (guarded by append_mu_).
  bool leading_ = false;

  // write_back_ahead()'s progress: the segment (base offset) and size it last wrote back. Written
  // by the write-back thread only.
  std::atomic<int64_t> written_back_base_{-1};
  std::atomic<uint64_t> written_back_size_{0};

  // Guarded by append_mu_.
  int64_t recovery_point_ = 0;
  int64_t unflushed_messages_ = 0;
  int64_t last_flush_ms_ = 0;
  bool closed_ = false;
  bool deleted_ = false;
  bool failed_ = false;  // a persistent I/O error left the active segment in an unknown state
  uint64_t truncated_bytes_at_open_ = 0;
  bool recovered_at_open_ = false;
  std::shared_ptr<const Listeners> listeners_;
  mutable std::mutex bound_mu_;               // guards retention_bound_
  std::function<int64_t()> retention_bound_;  // admin hooks
  // Idempotent producers: guarded by append_mu_.
  ProducerStateTable producers_;
  std::optional<int64_t> producer_snapshot_at_open_;
  int64_t producer_batches_replayed_ = 0;
  Status rebuild_producer_state();  // at open, after load_segments
  // INT64_MAX when no transaction is open; written under append_mu_.
  std::atomic<int64_t> first_unstable_offset_{INT64_MAX};
  mutable std::mutex txn_mu_;  // aborted_ (taken after append_mu_)
  // Segment base -> its aborted-transaction entries (what the .txnindex files hold).
  mutable std::map<int64_t, std::vector<AbortedTxn>> aborted_;
  Status write_log_start_offset(int64_t offset);  // append_mu_ held
};

}  // namespace strata::storage
