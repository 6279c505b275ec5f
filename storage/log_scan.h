// for_each_batch: reads a partition log's stored batches in order, from a file position to a bound,
// for the readers that rebuild state from a log (PK state replay, the group coordinator's load of
// a consumer-offsets partition). Whole batches only; a torn or unparseable batch is corruption.
#pragma once

#include <cstdint>
#include <functional>

#include "protocol/base/result.h"
#include "protocol/record/record_batch.h"

namespace strata::storage {

class PartitionLog;

// Calls `fn(batch)` for every whole batch of `log` holding offsets in [from, end), in log order,
// reading the segment files in chunks (batch by batch; the view is valid during the call only).
// Stops at the first error `fn` returns.
Status for_each_batch(const PartitionLog& log, int64_t from, int64_t end,
                      const std::function<Status(const protocol::RecordBatchView&)>& fn);

}  // namespace strata::storage
