// Kafka's read_committed rule for skipping aborted data, for the readers that filter a log
// themselves (ReadChangelog, the log cleaner): a data batch belongs to an aborted transaction
// when it is transactional and one of the aborted entries of its producer spans its base offset
// (first offset of the transaction .. its ABORT marker). `aborted` comes from
// PartitionLog::aborted_transactions over the range being read. Pure; any thread.
#pragma once

#include <vector>

#include "protocol/record/record_batch.h"
#include "storage/txn_index.h"

namespace strata::storage {

inline bool in_aborted_transaction(const std::vector<AbortedTxn>& aborted,
                                   const protocol::RecordBatchView& batch) {
  if (!batch.is_transactional() || batch.is_control()) return false;
  for (const auto& a : aborted) {
    if (a.producer_id == batch.producer_id() && a.first_offset <= batch.base_offset() &&
        batch.base_offset() <= a.last_offset) {
      return true;
    }
  }
  return false;
}

}  // namespace strata::storage
