// PkState::apply_changelog and replay: recovery by applying the after-images stored in the log
// past the persisted applied offset (never re-running the merge engine, so replay is
// deterministic).
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <limits>

#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/record_reader.h"
#include "storage/log_scan.h"
#include "storage/partition_log.h"

namespace strata::pkindex {

using namespace protocol::pk;  // wire facts: change headers, partitioners

namespace rf = row_format;

namespace {

// One after-image of a stored changelog batch: the row's RocksDB key and either its encoded value
// (with its offset) or a delete.
struct AfterImage {
  std::string key;
  bool del = false;
  std::string encoded;
  Overlay::Row row;  // the same row as the overlay sees it
  int32_t offset_delta = 0;
  int64_t timestamp = -1;  // the record's
};

// Decodes the after-images of `batch` (records at base_offset + delta, only those past
// `applied`); `none` records without a row are skipped, as are records without a key.
Status after_images(const protocol::RecordBatchView& batch, int64_t base_offset, int64_t applied,
                    const TableConfig& table, std::vector<AfterImage>& out) {
  protocol::RecordReader reader;
  STRATA_RETURN_IF_ERROR(reader.reset(batch));
  protocol::Record r;
  std::string decoded;  // an Avro table's row read from its image
  for (;;) {
    auto more = reader.next(r);
    if (!more.ok()) return more.status();
    if (!*more) break;
    const int64_t offset = base_offset + r.offset_delta;
    if (offset <= applied || !r.key) continue;
    std::optional<ChangeKind> kind;
    std::optional<int64_t> version;
    std::optional<int64_t> append_time;  // the TTL clock
    bool carries_row = false;            // a `none` record with the row (kRowVersionHeader)
    std::optional<int64_t> row_version;
    auto it = r.headers();
    protocol::Header h;
    while (it.next(h)) {
      if (h.key == kChangeHeader && h.value) kind = parse_change_kind(*h.value);
      if (h.key == kRowVersionHeader && h.value) {
        carries_row = true;
        if (h.value->size() == 8) row_version = rf::get_be64(h.value->data());
      }
      if (h.key == kAppendTimeHeader && h.value && h.value->size() == 8) {
        append_time = rf::get_be64(h.value->data());
      }
      if (table.merge_engine == MergeEngine::versioned && h.key == table.version_header &&
          h.value && h.value->size() == 8) {
        version = rf::get_be64(h.value->data());
      }
    }
    if (!kind) continue;
    if (*kind == ChangeKind::none) {
      // Records of older brokers and `none`s of absent keys carry no row: nothing changed.
      if (!carries_row || !r.value) continue;
      version = row_version;
    }
    AfterImage a;
    a.offset_delta = r.offset_delta;
    a.timestamp = reader.timestamp_of(r);
    rf::append_row_key(a.key, *r.key);
    if (*kind == ChangeKind::del || !r.value) {
      a.del = true;
    } else {
      std::span<const uint8_t> value = *r.value;
      if (table.value_format == ValueFormat::confluent) {  // logged framed, stored bare
        auto row = logged_row(value, table, decoded);
        if (!row.ok()) {
          return Status(Errc::corruption,
                        "offset " + std::to_string(offset) + ": " + row.status().message());
        }
        value = *row;
      }
      const int64_t ts = reader.timestamp_of(r);
      rf::encode_row(a.encoded, offset, ts, version, value, append_time);
      a.row.present = true;
      a.row.value.assign(reinterpret_cast<const char*>(value.data()), value.size());
      a.row.version = version;
      a.row.ttl_clock = append_time ? *append_time : ts;
    }
    out.push_back(std::move(a));
  }
  return Status::Ok();
}

}  // namespace

Status PkState::apply_changelog(const protocol::RecordBatchView& batch, int64_t base_offset) {
  quiet_perf_context();
  std::lock_guard wl(write_mu_);
  return apply_changelog_locked(batch, base_offset);
}

Status PkState::apply_changelog_locked(const protocol::RecordBatchView& batch,
                                       int64_t base_offset) {
  if (failed_) return Status(Errc::io_error, "primary-key state is offline after an I/O error");
  if (!overlay_.empty()) {
    return Status(Errc::invalid_argument, "apply_changelog while batches are held");
  }
  const int64_t last = base_offset + batch.last_offset_delta();
  const int64_t applied = applied_offset();
  if (last <= applied) return Status::Ok();  // already applied
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  rocksdb::WriteBatch wb;
  if (!batch.is_control()) {  // markers carry no rows; the offsets still count as applied
    std::vector<AfterImage> images;
    STRATA_RETURN_IF_ERROR(after_images(batch, base_offset, applied, options_.table, images));
    const auto order = in_key_order(
        images.size(), [&](uint32_t i) -> const std::string& { return images[i].key; });
    for (uint32_t i : order) {
      const AfterImage& a = images[i];
      if (a.del) {
        wb.Delete(a.key);
      } else {
        wb.Put(a.key, a.encoded);
      }
    }
    for (uint32_t i : order) {
      const AfterImage& a = images[i];
      put_history(wb, a.key, a.del ? std::string_view() : a.encoded, a.timestamp,
                  base_offset + a.offset_delta);
    }
  }
  return write_applied(wb, last);
}

Status PkState::hold_changelog_locked(const protocol::RecordBatchView& batch, int64_t base_offset,
                                      Overlay& target) {
  Overlay::Batch b;
  b.last_offset_delta = batch.last_offset_delta();
  if (!batch.is_control()) {
    std::vector<AfterImage> images;
    STRATA_RETURN_IF_ERROR(after_images(batch, base_offset, -1, options_.table, images));
    for (auto& a : images) {
      b.ops.push_back(Overlay::Op{a.key, a.del ? std::string() : std::move(a.encoded),
                                  a.offset_delta, a.timestamp, -1});
      b.rows[a.key] = a.del ? Overlay::Row{} : std::move(a.row);
    }
  }
  const uint64_t id = target.push(std::move(b));
  return target.appended(id, base_offset);
}

Status PkState::for_each_log_batch(
    int64_t from, int64_t end, const std::function<Status(const protocol::RecordBatchView&)>& fn) {
  return storage::for_each_batch(log_, from, end, fn);
}

int64_t PkState::log_end_for_state() const {
  return options_.replicated ? log_.log_end_offset() : log_.high_watermark();
}

Status PkState::replay_range_locked(int64_t end) {
  // From the oldest transaction open at the applied offset, so its records are held again —
  // unless an earlier step of this replay found them already.
  const int64_t from = txns_through_ >= 0 ? std::max(applied_offset() + 1, txns_through_)
                                          : std::min(applied_offset() + 1, txn_floor_);
  if (from >= end) return Status::Ok();
  if (from < log_.log_start_offset()) {
    return Status(Errc::corruption, path_ + ": state needs the log from offset " +
                                        std::to_string(from) + " but it starts at " +
                                        std::to_string(log_.log_start_offset()));
  }
  return for_each_log_batch(from, end, [&](const protocol::RecordBatchView& batch) {
    STRATA_RETURN_IF_ERROR(replay_batch_locked(batch));
    txns_through_ = batch.base_offset() + batch.last_offset_delta() + 1;
    return Status::Ok();
  });
}

Status PkState::replay() {
  quiet_perf_context();
  if (options_.replicated) return Status::Ok();  // catches up once its role is known
  const int64_t end = log_.high_watermark();
  int64_t from = applied_offset() + 1;
  if (from > end) {
    // The state is ahead of the log (a torn tail was truncated after RocksDB persisted). Without
    // checkpoints (not built yet) the only safe rebuild is from an untruncated log.
    if (log_.log_start_offset() > 0) {
      return Status(Errc::corruption, path_ + ": state at offset " + std::to_string(from - 1) +
                                          " is ahead of the log end " + std::to_string(end) +
                                          " and the log no longer starts at 0");
    }
    rocksdb::WriteBatch wb;
    // One-byte bounds: outside the memtable insert hints' domain (FirstByteOfLongerKeys in
    // pk_state.cc, which says why longer ones would corrupt the memtable on RocksDB < 9.2.1).
    wb.DeleteRange(std::string(1, rf::kRowPrefix), std::string(1, rf::kRowPrefix + 1));
    wb.DeleteRange(std::string(1, rf::kHistoryPrefix), std::string(1, rf::kHistoryPrefix + 1));
    wb.Delete(rocksdb::Slice(rf::kHistoryHorizonKey.data(), rf::kHistoryHorizonKey.size()));
    wb.Delete(rocksdb::Slice(rf::kHistoryWatermarkKey.data(), rf::kHistoryWatermarkKey.size()));
    wb.Delete(rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()));
    wb.Delete(rocksdb::Slice(rf::kTxnFloorKey.data(), rf::kTxnFloorKey.size()));
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    rocksdb::Status st = db_->Write(wo, &wb);
    if (!st.ok()) return Status(Errc::io_error, st.ToString());
    applied_offset_.store(-1);
    cache_owner_.store(env_->row_cache().new_owner(), std::memory_order_release);
    txn_floor_ = std::numeric_limits<int64_t>::max();
    hist_horizon_.store(0);
    hist_watermark_.store(std::numeric_limits<int64_t>::min());
  }
  std::lock_guard wl(write_mu_);
  return replay_range_locked(end);
}

// --- Replication ---

Status PkState::lead() {
  std::lock_guard wl(write_mu_);
  if (failed_) return Status(Errc::io_error, "primary-key state is offline after an I/O error");
  // From scratch: the open transactions are found again from the floor (records at or below the
  // applied offset only rebuild them), what lies past the applied offset is held.
  clear_pending_locked();
  leading_ = true;
  const int64_t end = log_.log_end_offset();
  const int64_t applied = applied_offset();
  const int64_t from = std::min(applied + 1, txn_floor_);
  if (from < log_.log_start_offset()) {
    return Status(Errc::corruption, path_ + ": state needs the log from offset " +
                                        std::to_string(from) + " but it starts at " +
                                        std::to_string(log_.log_start_offset()));
  }
  Status st = for_each_log_batch(from, end, [&](const protocol::RecordBatchView& batch) {
    if (batch.base_offset() + batch.last_offset_delta() <= applied) {
      return replay_batch_locked(batch);
    }
    return hold_batch_locked(batch);
  });
  if (!st.ok()) clear_pending_locked();
  return st;
}

Status PkState::follow() {
  std::lock_guard wl(write_mu_);
  // Held batches and open transactions may lie past what the new leader has: found again from
  // the floor by the next replay step.
  clear_pending_locked();
  leading_ = false;
  return Status::Ok();
}

namespace {
thread_local const PkState* tl_writing = nullptr;
}  // namespace

PkState::WritingScope::WritingScope(const PkState* s) : previous_(tl_writing) { tl_writing = s; }
PkState::WritingScope::~WritingScope() { tl_writing = previous_; }

Status PkState::apply_committed(int64_t hw) {
  quiet_perf_context();
  if (tl_writing == this) return Status::Ok();  // inside write(): the writer calls again
  std::lock_guard wl(write_mu_);
  if (failed_) STRATA_RETURN_IF_ERROR(heal_locked());
  if (applied_offset() + 1 > log_.log_end_offset()) {
    return Status(Errc::corruption,
                  path_ + ": state at offset " + std::to_string(applied_offset()) +
                      " is ahead of the log end " + std::to_string(log_.log_end_offset()));
  }
  if (leading_) {
    while (overlay_.ready(hw - 1)) STRATA_RETURN_IF_ERROR(apply_front());
    return Status::Ok();
  }
  if (!overlay_.empty()) return Status::Ok();  // a write in flight on a former leader
  return replay_range_locked(std::min(hw, log_.log_end_offset()));
}

}  // namespace strata::pkindex
