// The aborted-transaction index of a segment, `<base>.txnindex` (Kafka's TransactionIndex): one
// fixed 34-byte entry per ABORT marker in the segment, in marker order, all integers big-endian:
//   version int16 (0), producer_id int64, first_offset int64, last_offset int64 (the marker's
//   offset), last_stable_offset int64 (Kafka's lastStableOffset(completedTxn) at the marker)
// A read_committed Fetch carries the entries overlapping the fetched range, so the consumer can
// drop the aborted transactions' records.
//
// PartitionLog owns the files: Segment::create makes an empty one with every segment and
// Segment::remove_files deletes it; an entry is appended and fsynced right after its marker is
// written. Every entry is a function of the log prefix up to its marker, so recovery can drop and
// re-derive any of them (partition_log_producers.cc). Stateless helpers; callers serialise writers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

inline constexpr size_t kAbortedTxnEntrySize = 34;
inline constexpr int16_t kAbortedTxnVersion = 0;

struct AbortedTxn {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  int64_t last_stable_offset = -1;
  bool operator==(const AbortedTxn&) const = default;
};

std::string encode_aborted_txns(const std::vector<AbortedTxn>& entries);

struct TxnIndexContent {
  std::vector<AbortedTxn> entries;
  // A partial last entry or an entry of an unknown version ended the valid prefix (torn write).
  bool torn = false;
};
// nullopt when the file does not exist.
Result<std::optional<TxnIndexContent>> read_txn_index(Env* env, const std::string& path);
// Appends one entry and fsyncs it.
Status append_txn_index(Env* env, const std::string& path, const AbortedTxn& entry);

}  // namespace strata::storage
