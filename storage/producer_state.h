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
// producer.id.expiration.ms old.
//
// Persistence: `<20-digit offset>.snapshot` files in the partition directory (format below) hold
// the table as it was after every batch below that offset. PartitionLog writes one at each segment
// roll and at clean close, and at open loads the newest snapshot <= log end and replays batch
// headers after it (rebuild()).
//
// Snapshot file format (all integers big-endian), written atomically (write_file_atomically):
//   magic   "SPS1"      4 bytes
//   crc     uint32      CRC-32C of everything after this field
//   offset  int64       the snapshot's offset (also in the file name)
//   count   int32       number of producers
//   per producer:
//     producer_id int64, epoch int16, last_timestamp int64, batch_count int8 (0..5), then per batch
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
  ok,            // append it
  duplicate,     // a retry of a retained batch: do not append; answer with dup_* offsets
  out_of_order,  // sequence gap, or a new epoch not starting at sequence 0
  stale_epoch,   // epoch lower than the producer's current one
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
  void apply(const ProducerBatch& b, int64_t first_offset);
  // Removes producers whose last timestamp is at least `expiration_ms` before now. Returns how
  // many.
  size_t expire(int64_t now_ms, int64_t expiration_ms);

  const ProducerEntry* find(int64_t producer_id) const;
  size_t size() const { return producers_.size(); }
  void clear() { producers_.clear(); }

  // Serialises the table as a snapshot taken at `offset` (format above).
  std::string encode_snapshot(int64_t offset) const;
  // Replaces the table with a decoded snapshot; Errc::corruption on bad magic/CRC/length.
  // Returns the snapshot's offset.
  Result<int64_t> decode_snapshot(std::string_view bytes);

 private:
  std::unordered_map<int64_t, ProducerEntry> producers_;
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
