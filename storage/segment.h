// Segment: one `<base>.log` + `<base>.index` + `<base>.timeindex` triple of a partition log
// (Kafka's LogSegment). Appends batches, maps offsets to file positions (index floor, then a
// forward scan of batch headers), searches timestamps, and at open either trusts its indexes
// (flushed segments) or recovers: validates every batch (length, magic, CRC-32C, increasing
// offsets), truncates the torn tail after the last valid batch and rebuilds both indexes. The
// segment also creates and removes a `<base>.txnindex` (aborted transactions, storage/txn_index.h),
// which PartitionLog writes, fsyncs per entry and rebuilds when it is missing.
//
// Owned by PartitionLog (shared_ptr so an in-flight read keeps the file alive after deletion).
// Not internally synchronised. PartitionLog's contract: write() runs under the append lock only;
// commit()/seal()/truncation run under the append lock AND the state lock held exclusively; all
// const lookups run under the state lock held shared. Bytes past size() are never read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "protocol/base/result.h"
#include "storage/env.h"
#include "storage/log_config.h"
#include "storage/offset_index.h"
#include "storage/time_index.h"

namespace strata::storage {

// Header facts of one batch stored in a segment.
struct BatchInfo {
  uint64_t position = 0;  // byte position in the .log
  uint32_t size = 0;      // whole batch, batchLength + 12
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  int64_t max_timestamp = -1;
  int32_t leader_epoch = -1;
  int32_t record_count = 0;
};

// A record located by a timestamp search.
struct TimestampAndOffset {
  int64_t offset = -1;
  int64_t timestamp = -1;
  int32_t leader_epoch = -1;  // the partitionLeaderEpoch of the batch holding the record
};

class Segment {
 public:
  // Creates empty files (an existing file of the same name is emptied).
  static Result<std::shared_ptr<Segment>> create(Env* env, const std::string& dir,
                                                 int64_t base_offset, const LogConfig& config);

  enum class OpenMode {
    trust,    // flushed segment: load indexes (rebuild if they fail sanity checks), scan the tail
    recover,  // possibly torn: validate every batch, truncate the torn tail, rebuild indexes
  };
  static Result<std::shared_ptr<Segment>> open(Env* env, const std::string& dir,
                                               int64_t base_offset, const LogConfig& config,
                                               OpenMode mode, int64_t now_ms);

  // --- append path ---
  // Whether appending a batch of `batch_size` bytes ending at `last_offset` must go to a new
  // segment.
  bool should_roll(const LogConfig& config, uint32_t batch_size, int64_t last_offset,
                   int64_t now_ms) const;
  // Writes the bytes at the end of the .log; returns their position. Not yet visible to readers.
  // A failed write leaves nothing behind: a short write is cut off again (if that cut fails too,
  // the error is Errc::io_error).
  Result<uint64_t> write(std::span<const uint8_t> batch);
  // Publishes a written batch: size, next offset, max timestamp, sparse index entries. A failed
  // index write is rolled back (in memory and in the index files) and nothing is published; if
  // the rollback fails too, the error is Errc::io_error.
  Status commit(const BatchInfo& batch, int64_t now_ms);
  // Cuts the .log back to `position` (undoing a failed write that was never committed).
  Status truncate_uncommitted(uint64_t position);
  // Appends the final time-index entry (the segment's max timestamp) if missing. Mutates in-memory
  // index state: call with the state lock held exclusively, before seal().
  Status finalize_time_index();
  // The segment stops taking appends: final time-index entry, fsync all three files (unless
  // sync=false: already durable), close writers.
  Status seal(bool sync = true);
  Status sync_log();
  Status sync_indexes();
  // Final time-index entry, fsync, close writers (clean shutdown).
  Status close();
  Status remove_files();

  // --- lookups (bounded by size()) ---
  // The first batch whose last offset >= offset; nullopt if none in this segment.
  Result<std::optional<BatchInfo>> find_batch(int64_t offset) const;
  // The batch starting at `position`; nullopt at or past size().
  Result<std::optional<BatchInfo>> batch_at(uint64_t position) const;
  // First record with timestamp >= target and offset >= min_offset.
  Result<std::optional<TimestampAndOffset>> find_offset_for_timestamp(int64_t target,
                                                                      int64_t min_offset) const;
  // The first record carrying this segment's largest timestamp.
  Result<std::optional<TimestampAndOffset>> max_timestamp_record() const;

  int64_t base_offset() const { return base_offset_; }
  int64_t next_offset() const { return next_offset_; }  // base_offset when empty
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // seal() ran: no more appends (a roll that failed after sealing leaves a sealed active segment).
  bool sealed() const { return sealed_; }
  int64_t max_timestamp() const { return max_timestamp_; }       // -1 when no batch has one
  uint64_t truncated_bytes() const { return truncated_bytes_; }  // removed by recovery at open
  const std::shared_ptr<RandomAccessFile>& log_file() const { return reader_; }
  const OffsetIndex& offset_index() const { return *offset_index_; }
  const TimeIndex& time_index() const { return *time_index_; }

 private:
  Segment(Env* env, std::string dir, int64_t base_offset)
      : env_(env), dir_(std::move(dir)), base_offset_(base_offset), next_offset_(base_offset) {}

  Status recover(const LogConfig& config);
  Status load_trusted(const LogConfig& config);
  // Kafka's sparse-index rule, applied to each batch in log order.
  Status index_batch(const BatchInfo& batch);
  Result<BatchInfo> read_header(uint64_t position, uint64_t limit) const;
  Result<std::vector<uint8_t>> read_batch(const BatchInfo& batch) const;

  Env* env_;
  std::string dir_;
  int64_t base_offset_;
  int64_t next_offset_;
  uint64_t size_ = 0;
  int32_t index_interval_bytes_ = 4096;
  uint64_t bytes_since_last_index_ = 0;
  int64_t max_timestamp_ = -1;
  int64_t offset_of_max_timestamp_ = -1;  // last offset of the first batch carrying max_timestamp_
  int64_t rolling_base_ms_ = -1;          // time of the first append (roll by segment.ms)
  uint64_t truncated_bytes_ = 0;
  bool sealed_ = false;
  bool time_index_dirty_ = false;  // finalize_time_index() wrote an entry not yet synced
  std::unique_ptr<WritableFile> writer_;
  std::shared_ptr<RandomAccessFile> reader_;
  std::unique_ptr<OffsetIndex> offset_index_;
  std::unique_ptr<TimeIndex> time_index_;
};

}  // namespace strata::storage
