// PkState::apply_changelog and replay: recovery by applying the after-images stored in the log
// past the persisted applied offset (never re-running the merge engine, so replay is
// deterministic).
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"

namespace strata::pkindex {

using namespace protocol::pk;  // wire facts: change headers, partitioners

namespace rf = row_format;

namespace {
constexpr uint32_t kReadChunk = 4u << 20;
}  // namespace

Status PkState::apply_changelog(const protocol::RecordBatchView& batch, int64_t base_offset) {
  std::lock_guard wl(write_mu_);
  if (failed_) return Status(Errc::io_error, "primary-key state is offline after an I/O error");
  if (!overlay_.empty()) {
    return Status(Errc::invalid_argument, "apply_changelog while batches are held");
  }
  const int64_t last = base_offset + batch.last_offset_delta();
  const int64_t applied = applied_offset();
  if (last <= applied) return Status::Ok();  // already applied
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  if (batch.is_control()) {  // markers carry no rows; the offsets still count as applied
    rocksdb::WriteBatch wb;
    return write_applied(wb, last);
  }
  protocol::RecordReader reader;
  STRATA_RETURN_IF_ERROR(reader.reset(batch));
  protocol::Record r;
  std::string key, value;
  rocksdb::WriteBatch wb;
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
      if (options_.table.merge_engine == MergeEngine::versioned &&
          h.key == options_.table.version_header && h.value && h.value->size() == 8) {
        version = rf::get_be64(h.value->data());
      }
    }
    if (!kind) continue;
    if (*kind == ChangeKind::none) {
      // Records of older brokers and `none`s of absent keys carry no row: nothing changed.
      if (!carries_row || !r.value) continue;
      version = row_version;
    }
    key.clear();
    rf::append_row_key(key, *r.key);
    if (*kind == ChangeKind::del || !r.value) {
      wb.Delete(key);
    } else {
      value.clear();
      rf::encode_row(value, offset, reader.timestamp_of(r), version, *r.value, append_time);
      wb.Put(key, value);
    }
  }
  return write_applied(wb, last);
}

Status PkState::replay() {
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
    wb.DeleteRange(std::string(1, rf::kRowPrefix), std::string(1, rf::kRowPrefix + 1));
    wb.Delete(rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()));
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    rocksdb::Status st = db_->Write(wo, &wb);
    if (!st.ok()) return Status(Errc::io_error, st.ToString());
    applied_offset_.store(-1);
    from = 0;
  }
  if (from < log_.log_start_offset()) {
    return Status(Errc::corruption, path_ + ": state needs the log from offset " +
                                        std::to_string(from) + " but it starts at " +
                                        std::to_string(log_.log_start_offset()));
  }
  std::vector<uint8_t> buf;
  while (from < end) {
    auto read = log_.read(from, kReadChunk, true, end);
    if (!read.ok()) return read.status();
    if (read->ranges.empty()) break;
    const int64_t before = from;
    for (const auto& range : read->ranges) {
      buf.resize(range.size);
      auto n = range.file->read(range.position, range.size, buf.data());
      if (!n.ok()) return n.status();
      if (*n != range.size) return Status(Errc::corruption, "short read while replaying the log");
      std::span<const uint8_t> rest(buf.data(), buf.size());
      while (!rest.empty()) {
        const size_t size = protocol::peek_batch_size(rest);
        if (size == 0 || size > rest.size()) return Status(Errc::corruption, "torn batch in log");
        protocol::RecordBatchView batch(rest.first(size));
        rest = rest.subspan(size);
        if (batch.last_offset() < from) continue;
        STRATA_RETURN_IF_ERROR(apply_changelog(batch, batch.base_offset()));
        from = batch.next_offset();
      }
    }
    if (from == before) return Status(Errc::corruption, "log replay made no progress");
  }
  return Status::Ok();
}

}  // namespace strata::pkindex
