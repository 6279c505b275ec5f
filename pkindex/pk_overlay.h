// Overlay: the batches a PkState has computed whose rows are not in RocksDB yet, oldest first.
//
// A computed batch enters at push() (not appended yet: base offset unknown), is marked appended()
// once the log accepted it, and leaves at pop_front() when it is applied; a failed append drops it
// and every batch computed on top of it (rollback()). compute() reads a key's newest row here
// before RocksDB, so a batch sees the effect of every earlier batch even while their rows are
// held (the leader keeps (high watermark, log end] here under replication; a transaction keeps its
// records here until the commit marker).
//
// Invariants: batch ids strictly increase; appended batches form a prefix of the deque and their
// offsets increase; at most the newest batch is unappended.
//
// Owned by one PkState; not thread-safe (PkState guards it with its write mutex).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/base/result.h"

namespace strata::pkindex {

class Overlay {
 public:
  // A key's row after a batch: absent (deleted) or present with its value, version and TTL clock.
  struct Row {
    bool present = false;
    std::string value;
    std::optional<int64_t> version;
    int64_t ttl_clock = -1;  // the row's append time (TTL tables), else -1
  };
  // One RocksDB write of the batch: `encoded` is the row value whose offset is patched at apply
  // time (empty = delete).
  struct Op {
    std::string key;  // RocksDB key
    std::string encoded;
    int32_t offset_delta = 0;
    int64_t timestamp = -1;  // the record's (a delete's history entry needs it)
    int64_t offset = -1;     // absolute, once a transaction's marker moved it to another batch
  };
  struct Batch {
    uint64_t id = 0;
    int64_t base_offset = -1;  // -1 until appended()
    int32_t last_offset_delta = 0;
    std::unordered_map<std::string, Row> rows;  // by RocksDB key: the state after this batch
    std::vector<Op> ops;                        // in record order
    // A transaction decided by its marker on a replicated leader, held at the marker's offset
    // until the high watermark passes it: its ops (a COMMIT's rows) already carry their own
    // records' offsets (not patched at apply), and its records begin at txn_first_offset (kept
    // as the replay floor until it is applied). -1: an ordinary batch.
    int64_t txn_first_offset = -1;
    bool is_appended() const { return base_offset >= 0; }
    int64_t last_offset() const { return base_offset + last_offset_delta; }
  };

  // Adds a computed batch (newest); returns its id. The newest batch must be appended first.
  uint64_t push(Batch batch);
  // The log accepted batch `id` at `base_offset`. invalid_argument when `id` is not the newest
  // unappended batch or its offsets would not follow the previous batch's.
  Status appended(uint64_t id, int64_t base_offset);
  // The append of `id` failed: drops it and every later batch (they were computed on top of it).
  // Unknown ids are ignored.
  void rollback(uint64_t id);

  // The key's row after the newest batch that wrote it; nullptr when no batch here wrote it.
  const Row* find(const std::string& key) const;

  // The oldest batch when it is appended and its last offset is <= `offset`, else nullptr.
  Batch* ready(int64_t offset);
  Batch& front() { return batches_.front(); }
  Batch& back() { return batches_.back(); }
  const std::deque<Batch>& batches() const { return batches_; }
  std::deque<Batch>& batches() { return batches_; }
  void pop_front() { batches_.pop_front(); }
  void clear() { batches_.clear(); }

  bool empty() const { return batches_.empty(); }
  size_t size() const { return batches_.size(); }
  // The offset after the newest appended batch; -1 when none is appended.
  int64_t appended_end() const;

 private:
  std::deque<Batch> batches_;
  uint64_t next_id_ = 1;
};

}  // namespace strata::pkindex
