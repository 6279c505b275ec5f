// Segment scanning for strata-dump: walks the RecordBatch v2 headers of a `.log` segment (layout
// in protocol/record/batch_format.h) from a ByteSource, checks each batch (length, magic, record
// count, CRC-32C stored vs computed, offset order) and reports every batch and every problem with
// its file position. Never trusts a length it has not bounded by the file size, so garbage input
// cannot make it allocate or read out of range. A batch with a good magic whose length is still
// plausible (fits in the file, covers at least a header) is skipped past even when its CRC is
// wrong, so one corrupt byte costs one batch. After a bad magic or an implausible length the scan
// resynchronises on the next position holding a whole batch with a matching CRC (the skipped
// range is reported); when none follows, a length running past the end is a torn tail.
//
// Owned by strata-dump (tools/dump). Pure logic over a ByteSource; one thread per scan.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "tools/dump/byte_source.h"

namespace strata::dump {

struct BatchInfo {
  uint64_t position = 0;  // file offset of the batch's first byte
  uint64_t size = 0;      // batchLength + 12
  int64_t base_offset = 0;
  int32_t last_offset_delta = 0;
  int32_t record_count = 0;
  int32_t partition_leader_epoch = 0;
  int8_t magic = 0;
  uint32_t crc_stored = 0;
  uint32_t crc_computed = 0;
  int16_t attributes = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = 0;
  int16_t producer_epoch = 0;
  int32_t base_sequence = 0;

  // base_offset + last_offset_delta, saturated to the int64 range (crafted headers may overflow).
  int64_t last_offset() const {
    int64_t r = 0;
    if (__builtin_add_overflow(base_offset, int64_t{last_offset_delta}, &r)) {
      return last_offset_delta < 0 ? std::numeric_limits<int64_t>::min()
                                   : std::numeric_limits<int64_t>::max();
    }
    return r;
  }
  // Offsets usable for arithmetic: base >= 0 and last_offset() + 1 fits in int64.
  bool offsets_in_range() const {
    int64_t r = 0;
    return base_offset >= 0 &&
           !__builtin_add_overflow(base_offset, int64_t{last_offset_delta}, &r) &&
           r < std::numeric_limits<int64_t>::max();
  }
  bool crc_ok() const { return crc_stored == crc_computed; }
  // Header fields and CRC are trustworthy: magic 2, CRC matches, sane counts.
  bool valid() const;
};

enum class ProblemKind {
  crc_mismatch,         // stored CRC != computed: some byte in [attributes, end) changed
  bad_magic,            // magic != 2: the scan resynchronised on the next valid batch
  bad_record_count,     // recordCount < 0 or > lastOffsetDelta + 1, or lastOffsetDelta < 0
  bad_length,           // batchLength below the header size, or past the end of the file while a
                        // valid batch follows: [position, end) was skipped
  truncated,            // a batch (or header) runs past the end of the file, nothing valid after
                        // it: a torn tail starting at `position`
  offset_order,         // a valid batch whose base offset is not above the previous last offset
  offset_out_of_range,  // below the segment's base offset, or more than INT32_MAX above it
  bad_records,          // the records inside a valid batch do not decode
  index,                // an index entry that is malformed or disagrees with the log
};
const char* problem_kind_name(ProblemKind k);

struct Problem {
  ProblemKind kind;
  uint64_t position = 0;     // first file byte concerned
  uint64_t end = 0;          // one past the last byte concerned (== position when unknown)
  int64_t base_offset = -1;  // of the batch concerned, when known
  std::string detail;
};

class SegmentVisitor {
 public:
  virtual ~SegmentVisitor() = default;
  // Every batch whose header could be read and whose length is plausible, valid or not. `bytes`
  // is the whole batch, valid during the call only.
  virtual void on_batch(const BatchInfo& batch, std::span<const uint8_t> bytes) = 0;
  virtual void on_problem(const Problem& problem) = 0;
};

struct ScanOptions {
  int64_t segment_base = -1;  // from the file name; -1 = unknown (no range check)
};

struct ScanSummary {
  uint64_t file_size = 0;
  uint64_t scanned_bytes = 0;  // the scan stopped here (== file_size when it reached the end)
  uint64_t batches = 0;
  uint64_t valid_batches = 0;
  uint64_t records = 0;  // sum of recordCount over valid batches
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  int64_t max_timestamp = -1;
  uint64_t problems = 0;
};

// Scans the whole source. Fails only when reading the source fails.
Result<ScanSummary> scan_segment(const ByteSource& source, const ScanOptions& options,
                                 SegmentVisitor& visitor);

}  // namespace strata::dump
