// BatchFilter: rewrites one stored RecordBatch v2 keeping only chosen records, the way Kafka's
// cleaner does for magic v2 (MemoryRecords.filterTo): the surviving records keep their offsets
// (offset deltas are not renumbered), and the batch keeps its baseOffset, lastOffsetDelta,
// producer id/epoch, baseSequence, partitionLeaderEpoch, codec and attributes, so the producer
// state can still be rebuilt from the log. maxTimestamp is recomputed from the survivors
// (CreateTime) or kept (LogAppendTime). When `delete_horizon_ms` is given the batch's baseTimestamp
// field carries it and the delete-horizon attribute bit is set (KIP-534); record timestamps stay
// exact because their deltas are rebased. A batch whose records are all removed can be written as
// an empty, header-only batch (recordCount 0) that keeps the producer fields.
//
// Owned by one cleaner thread; reuses its buffers across batches (no per-record allocation).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/record/record.h"
#include "protocol/record/record_batch.h"

namespace strata::storage::cleaner {

class BatchFilter {
 public:
  // Starts a new output batch built from `source` (which must outlive finish()).
  void begin(const protocol::RecordBatchView& source);
  // Adds a surviving record of the source batch; `timestamp` is its absolute timestamp
  // (source baseTimestamp + timestampDelta).
  void keep(const protocol::Record& record, int64_t timestamp);
  int32_t kept() const { return kept_; }
  // Writes the rewritten batch (appended to `out`). With no kept records writes the empty,
  // header-only batch.
  Status finish(std::optional<int64_t> delete_horizon_ms, std::vector<uint8_t>& out);

 private:
  struct Kept {
    size_t at;  // position of the record's body in body_ (after attributes/deltas)
    size_t len;
    int8_t attributes;
    int32_t offset_delta;
    int64_t timestamp;
  };

  protocol::RecordBatchView source_;
  std::vector<Kept> kept_records_;
  std::vector<uint8_t> bodies_;   // key/value/headers tails of kept records
  std::vector<uint8_t> records_;  // re-encoded records (uncompressed)
  int32_t kept_ = 0;
};

}  // namespace strata::storage::cleaner
