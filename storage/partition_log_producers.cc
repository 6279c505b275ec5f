// PartitionLog's idempotent-producer state: rebuild at open (newest producer snapshot <= log end,
// then a replay of the batch headers after it), expiration and introspection (see partition_log.h
// and producer_state.h). The dedupe check itself sits in PartitionLog::append (partition_log.cc).
#include <algorithm>

#include "protocol/record/batch_format.h"
#include "protocol/record/record_batch.h"
#include "storage/partition_log.h"

namespace strata::storage {

namespace bf = protocol::batch_format;

Status PartitionLog::rebuild_producer_state() {
  std::lock_guard<std::mutex> lock(append_mu_);
  auto snap = load_producers_locked(log_end_offset(), &producer_batches_replayed_);
  if (!snap.ok()) return snap.status();
  producer_snapshot_at_open_ = *snap;
  return Status::Ok();
}

Result<std::optional<int64_t>> PartitionLog::load_producers_locked(int64_t end, int64_t* replayed) {
  *replayed = 0;
  auto snap = load_producer_snapshot(env_, dir_, end, producers_);
  if (!snap.ok()) return snap.status();
  const int64_t from = snap->value_or(0);
  if (from >= end) return *snap;

  // Replay every batch whose last offset is >= `from`, reading only the 61-byte headers.
  std::shared_lock<std::shared_mutex> state(state_mu_);
  const size_t first = segment_index_for(from);
  uint8_t header[bf::kHeaderSize];
  for (size_t si = first; si < segments_.size(); ++si) {
    const Segment& seg = *segments_[si];
    const auto& file = seg.log_file();
    uint64_t pos = 0;
    while (pos + bf::kHeaderSize <= seg.size()) {
      auto n = file->read(pos, bf::kHeaderSize, header);
      if (!n.ok()) return n.status();
      if (*n != bf::kHeaderSize) {
        return Status(Errc::corruption, "short batch header in " + file->path());
      }
      const size_t size = protocol::peek_batch_size({header, bf::kHeaderSize});
      if (size < bf::kHeaderSize) {
        return Status(Errc::corruption, "bad batch length in " + file->path());
      }
      protocol::RecordBatchView view({header, bf::kHeaderSize});
      if (view.base_offset() >= end) return *snap;
      if (view.last_offset() >= from && view.producer_id() >= 0 && !view.is_control()) {
        producers_.apply(
            ProducerBatch{view.producer_id(), view.producer_epoch(), view.base_sequence(),
                          view.last_offset_delta(), view.max_timestamp()},
            view.base_offset());
        ++*replayed;
      }
      pos += size;
    }
  }
  return *snap;
}

size_t PartitionLog::expire_producers(int64_t now_ms, int64_t expiration_ms) {
  std::lock_guard<std::mutex> lock(append_mu_);
  return producers_.expire(now_ms, expiration_ms);
}

std::optional<ProducerEntry> PartitionLog::producer_state(int64_t producer_id) const {
  std::lock_guard<std::mutex> lock(append_mu_);
  const ProducerEntry* e = producers_.find(producer_id);
  return e ? std::optional<ProducerEntry>(*e) : std::nullopt;
}

}  // namespace strata::storage
