// The batch summaries of a segment, `<base>.stats`: a side index with one entry per batch whose
// owner summarised it (a PK table's column statistics, pkindex/column_stats.h), so a filtered
// read can skip batches without reading them. Kafka's batch format has no room for such data.
//
// Entry (integers big-endian): payload_length u32, crc32c u32 (of everything after it),
// base_offset i64, last_offset i64, position u64 (in the .log), size u32 (whole batch),
// batch_crc u32 (the batch header's CRC), payload. Storage never reads the payload.
//
// A summary is derived data, written after its batch without fsync: a crash may lose the tail,
// a truncation or a cleaner rewrite may leave entries of batches that are gone. So readers trust
// an entry only after checking it against the batch header at its position (base offset, size,
// CRC: the batch it describes is the one there), and a batch without a valid entry is simply
// read (never skipped): a summary can cost a skip, never a record.
// Stateless helpers; PartitionLog owns the files (partition_log_summaries.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/env.h"

namespace strata::storage {

struct BatchSummary {
  int64_t base_offset = -1;
  int64_t last_offset = -1;
  uint64_t position = 0;
  uint32_t size = 0;
  uint32_t batch_crc = 0;
  std::string payload;
};

// Made by the partition's owner for each batch appended (leader and follower appends): the
// payload, or nullopt for no summary. Called under the log's append lock: keep it cheap and
// never call back into the log.
using BatchSummarizer = std::function<std::optional<std::string>(std::span<const uint8_t> batch)>;

inline constexpr size_t kSummaryEntryHeaderSize = 40;
// A larger file is not read (its batches are read, not skipped): bounds what one filtered read
// costs however small the batches are.
inline constexpr uint64_t kMaxSummaryFileBytes = 16u << 20;

std::string encode_batch_summary(const BatchSummary& s);
// The entries of a file's valid prefix (a torn or corrupt entry ends it); `valid_bytes`, if
// given, gets the prefix's length (where a writer continues).
std::vector<BatchSummary> decode_batch_summaries(std::span<const uint8_t> bytes,
                                                 size_t* valid_bytes = nullptr);

// A segment's summaries for a read, ordered by base offset (the newest entry of a base): not yet
// checked against their batches — check_batch_summary() before trusting one, which costs one
// small read, so a reader pays it only for the entries it uses.
struct SegmentSummaries {
  int64_t segment_base = -1;
  int64_t segment_end = -1;                // the segment's next offset when read
  std::shared_ptr<RandomAccessFile> file;  // the segment's .log
  std::vector<BatchSummary> entries;
  uint64_t file_bytes = 0;  // of the .stats file read (what loading them cost)
  bool too_large = false;   // the .stats file exceeds kMaxSummaryFileBytes: not read
};

// Whether `s` describes the batch at its position in `file` (base offset, size, CRC and last
// offset of the header there); false also when that header cannot be read.
bool check_batch_summary(const RandomAccessFile& file, const BatchSummary& s);

}  // namespace strata::storage
