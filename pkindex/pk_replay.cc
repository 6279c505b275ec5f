// PkState::replay: recovery by applying the after-images stored in the log past the persisted
// applied offset (never re-running the merge engine, so replay is deterministic).
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "pkindex/change_headers.h"
#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"

namespace strata::pkindex {

namespace rf = row_format;

namespace {
constexpr uint32_t kReadChunk = 4u << 20;
}  // namespace

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
  protocol::RecordReader reader;
  protocol::Record r;
  std::string key, value;
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
        STRATA_RETURN_IF_ERROR(reader.reset(batch));
        rocksdb::WriteBatch wb;
        for (;;) {
          auto more = reader.next(r);
          if (!more.ok()) return more.status();
          if (!*more) break;
          const int64_t offset = reader.offset_of(r);
          if (offset < from || !r.key) continue;
          std::optional<ChangeKind> kind;
          std::optional<int64_t> version;
          std::optional<int64_t> append_time;  // TTL clock (H2)
          auto it = r.headers();
          protocol::Header h;
          while (it.next(h)) {
            if (h.key == kChangeHeader && h.value) kind = parse_change_kind(*h.value);
            if (h.key == kAppendTimeHeader && h.value && h.value->size() == 8) {
              append_time = rf::get_be64(h.value->data());
            }
            if (options_.table.merge_engine == MergeEngine::versioned &&
                h.key == options_.table.version_header && h.value && h.value->size() == 8) {
              version = rf::get_be64(h.value->data());
            }
          }
          if (!kind || *kind == ChangeKind::none) continue;
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
        uint8_t ob[8];
        rf::put_be64(ob, batch.last_offset());
        wb.Put(rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()),
               rocksdb::Slice(reinterpret_cast<const char*>(ob), 8));
        rocksdb::WriteOptions wo;
        wo.disableWAL = true;
        rocksdb::Status st = db_->Write(wo, &wb);
        if (!st.ok()) return Status(Errc::io_error, "replay into " + path_ + ": " + st.ToString());
        applied_offset_.store(batch.last_offset(), std::memory_order_release);
        from = batch.next_offset();
      }
    }
    if (from == before) return Status(Errc::corruption, "log replay made no progress");
  }
  return Status::Ok();
}

}  // namespace strata::pkindex
