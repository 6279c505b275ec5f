// Record-level timestamp search inside one RecordBatch v2, for ListOffsets-by-timestamp and
// max-timestamp lookups (protocol/record's RecordReader, which decompresses when needed).
// Stateless functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "protocol/base/result.h"

namespace strata::storage {

struct RecordHit {
  int64_t offset;
  int64_t timestamp;
};

// The first record (in offset order) with timestamp >= target and offset >= min_offset.
// LogAppendTime batches report maxTimestamp for every record, as Kafka does.
// Errc::corruption if the records do not parse.
Result<std::optional<RecordHit>> find_record_at_or_after(std::span<const uint8_t> batch,
                                                         int64_t target, int64_t min_offset);

// The first record whose timestamp equals the batch's maxTimestamp.
Result<std::optional<RecordHit>> find_max_timestamp_record(std::span<const uint8_t> batch);

}  // namespace strata::storage
