// ProducerStateTable: the idempotent-producer state of one partition (Kafka's
// ProducerStateManager). For every producer id that wrote to the partition it keeps the epoch, the
// last 5 batches (first and last sequence, first and last offset, max timestamp) and the last
// timestamp. It decides, for an incoming batch, whether it is a retried duplicate of one of those 5
// (answer with the original offsets, do not write), out of sequence, or from a stale epoch —
// module-neutral answers that the broker maps to Kafka error codes. The rules follow the Java
// broker (ProducerAppendInfo):
//   - duplicate: same producer id and epoch, and exactly the sequence range of a retained batch;
//   - epoch lower than the known one -> stale_epoch;
//   - epoch higher than the known one -> accepted only at sequence 0, else out_of_order;
//   - same epoch -> first sequence must be last sequence + 1 (wrapping after INT32_MAX);
//   - an unknown producer id is accepted at any sequence (Kafka 2.5+: KIP-360; no
//   UNKNOWN_PRODUCER_ID).
// Entries expire when their last timestamp (the batch max timestamp, as in Kafka) is
// producer.id.expiration.ms old, unless a transaction of theirs is open.
//
// Transactions (Kafka's currentTxnFirstOffset): a transactional batch opens a transaction at its
// first offset if none is open; a control batch (COMMIT/ABORT marker) of the producer closes it.
// The smallest open first offset bounds the last stable offset (PartitionLog).
//
// Persistence: `<20-digit offset>.snapshot` files in the partition directory (format below) hold
// the table as it was after every batch below that offset. PartitionLog writes one at each segment
// roll and at clean close, and at open loads the newest snapshot <= log end and replays batch
// headers after it (rebuild()).
//
// Snapshot file format (all integers big-endian), written atomically (write_file_atomically):
//   magic   "SPS3"      4 bytes ("SPS2": without coordinator_epoch, "SPS1": without
//                       txn_first_offset either; both still read)
//   crc     uint32      CRC-32C of everything after this field
//   offset  int64       the snapshot's offset (also in the file name)
//   count   int32       number of producers
//   per producer:
//     producer_id int64, epoch int16, last_timestamp int64, txn_first_offset int64 (-1: no open
//     transaction; SPS2+), coordinator_epoch int32 (-1: no marker yet; SPS3), batch_count int8
//     (0..5), then per batch
//     (oldest first): first_seq int32, last_seq int32, first_offset int64, last_offset int64,
//     timestamp int64
// Unlike Kafka's snapshot (last batch only) all 5 retained batches are stored, so a retry of any of
// them is still recognised after a restart.
//
// Owned by PartitionLog. Not internally synchronised: PartitionLog calls check()/apply() under its
// append lock (so the dedupe decision and the append are atomic), and expire()/snapshot under the
// same lock.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

inline constexpr int kProducerBatchesToRetain = 5;

// The producer fields of one v2 batch header.
struct ProducerBatch {
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t first_seq = -1;
  int32_t last_offset_delta = 0;
  int64_t max_timestamp = -1;

  bool has_producer() const { return producer_id >= 0; }
  // first_seq + last_offset_delta, wrapping past INT32_MAX to 0 (Kafka's incrementSequence).
  int32_t last_seq() const;
};

struct ProducerBatchMeta {
  int32_t first_seq = -1;
  int32_t last_seq = -1;
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  int64_t timestamp = -1;
};

struct ProducerEntry {
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int64_t last_timestamp = -1;
  // First offset of the producer's open transaction; -1 when none is open.
  int64_t txn_first_offset = -1;
  // The coordinator epoch of its last COMMIT/ABORT marker (-1: none): a marker from an older
  // coordinator (one deposed since) is refused (Kafka's TRANSACTION_COORDINATOR_FENCED).
  int32_t coordinator_epoch = -1;
  // Ring of the newest batches; batch(0) is the oldest retained.
  std::array<ProducerBatchMeta, kProducerBatchesToRetain> ring{};
  uint8_t head = 0;   // index of the oldest
  uint8_t count = 0;  // retained batches

  const ProducerBatchMeta& batch(int i) const {
    return ring[(head + i) % kProducerBatchesToRetain];
  }
  const ProducerBatchMeta* last() const { return count ? &batch(count - 1) : nullptr; }
  void add(const ProducerBatchMeta& b);
  void clear_batches() { head = count = 0; }
};

// The decision for one incoming batch.
enum class ProducerCheck : uint8_t {
  ok,                  // append it
  duplicate,           // a retry of a retained batch: do not append; answer with dup_* offsets
  out_of_order,        // sequence gap, or a new epoch not starting at sequence 0
  stale_epoch,         // epoch lower than the producer's current one
  fenced_coordinator,  // a marker from a coordinator epoch older than the last marker's
};

// A transaction ended by a marker (Kafka's CompletedTxn + the LSO recorded with an abort).
struct CompletedTxn {
  int64_t producer_id = -1;
  int64_t first_offset = -1;  // the transaction's first offset (the marker's when none was open)
  int64_t last_offset = -1;   // the marker's offset
  bool aborted = false;
  // Kafka's lastStableOffset(completedTxn): the smallest first offset of the OTHER open
  // transactions, else last_offset + 1.
  int64_t last_stable_offset = -1;
};

struct ProducerCheckResult {
  ProducerCheck kind = ProducerCheck::ok;
  int64_t dup_first_offset = -1;
  int64_t dup_last_offset = -1;
  int64_t dup_timestamp = -1;
  // Human-readable reason for out_of_order / stale_epoch (empty otherwise).
  std::string message;
};

class ProducerStateTable {
 public:
  // The client-side validation of `b` against the current state (no change). Batches without a
  // producer id are always ok.
  ProducerCheckResult check(const ProducerBatch& b) const;
  // Records an appended batch at [first_offset, first_offset + last_offset_delta]. No validation
  // (also used when replaying the log at recovery, like Kafka's replication origin).
  // A batch with `transactional` set opens a transaction at first_offset if none is open.
  void apply(const ProducerBatch& b, int64_t first_offset, bool transactional = false);
  // A marker's checks (Kafka's appendEndTxnMarker): stale_epoch when `epoch` is below the
  // producer's, fenced_coordinator when `coordinator_epoch` is below the one of its last marker,
  // else ok. An unknown producer is ok.
  ProducerCheckResult check_marker(int64_t producer_id, int16_t epoch,
                                   int32_t coordinator_epoch) const;
  // Records a COMMIT/ABORT marker at `offset` (no validation): the producer takes `epoch` and
  // `coordinator_epoch` and its open transaction ends. Returns the completed transaction.
  CompletedTxn apply_marker(int64_t producer_id, int16_t epoch, int64_t offset, bool commit,
                            int64_t timestamp, int32_t coordinator_epoch);
  // The smallest first offset of an open transaction; nullopt when none is open.
  std::optional<int64_t> first_open_txn_offset() const;
  size_t open_txn_count() const { return open_txns_.size(); }
  // Removes producers whose last timestamp is at least `expiration_ms` before now. Returns how
  // many.
  size_t expire(int64_t now_ms, int64_t expiration_ms);

  const ProducerEntry* find(int64_t producer_id) const;
  // A copy of every producer's entry, by producer id.
  std::vector<ProducerEntry> entries() const;
  size_t size() const { return producers_.size(); }
  void clear() {
    producers_.clear();
    open_txns_.clear();
  }

  // Serialises the table as a snapshot taken at `offset` (format above).
  std::string encode_snapshot(int64_t offset) const;
  // Replaces the table with a decoded snapshot; Errc::corruption on bad magic/CRC/length.
  // Returns the snapshot's offset.
  Result<int64_t> decode_snapshot(std::string_view bytes);

 private:
  void set_txn_first_offset(ProducerEntry& e, int64_t offset);

  std::unordered_map<int64_t, ProducerEntry> producers_;
  // (txn_first_offset, producer_id) of every entry with an open transaction: the LSO is its first.
  std::set<std::pair<int64_t, int64_t>> open_txns_;
};

// --- snapshot files in a partition directory ---
// "<dir>/<20-digit offset>.snapshot"
std::string producer_snapshot_path(const std::string& dir, int64_t offset);
// Offsets of the snapshot files in `dir`, ascending.
Result<std::vector<int64_t>> list_producer_snapshots(Env* env, const std::string& dir);
// Writes `table` as the snapshot at `offset` (atomically), then deletes all but the newest
// `keep` snapshots.
Status write_producer_snapshot(Env* env, const std::string& dir, const ProducerStateTable& table,
                               int64_t offset, int keep = 2);
// Loads the newest readable snapshot whose offset is <= max_offset into `table` (snapshots above
// max_offset — left by a truncated tail — and unreadable ones are deleted). Returns its offset, or
// nullopt (table cleared) when there is none.
Result<std::optional<int64_t>> load_producer_snapshot(Env* env, const std::string& dir,
                                                      int64_t max_offset,
                                                      ProducerStateTable& table);

}  // namespace strata::storage
