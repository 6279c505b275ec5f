// The history index of tables with table.history.enabled: every applied change of every key,
// kept in the state's RocksDB next to the rows (row_format.h: 'h' + key length + key + offset ->
// the row as that change left it, or a delete), written in the same WriteBatch as the rows, so
// it is exactly as durable and as recoverable as they are (replay re-applies changes, and with
// them their history entries). Reads answer "the row as of a point": the newest change at an
// offset <= O, or with a timestamp <= T. Trimming follows the log's start: below the horizon H
// only each key's newest change is kept (the base), so every point from H - 1 on is still exact;
// a time query needs the watermark W, the newest timestamp among the changes below H: from W on
// every change below H has happened, so the base answers; before W the answer could lie in what
// was trimmed, and the read says so (out_of_retention, earliest = W) instead of guessing.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"

namespace strata::pkindex {

namespace rf = row_format;

namespace {

constexpr size_t kTrimBatchBytes = 4u << 20;

std::span<const uint8_t> bytes(const rocksdb::Slice& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// One history entry, decoded.
struct Change {
  int64_t offset = -1;
  int64_t timestamp = -1;
  bool del = false;
  std::optional<rf::RowView> row;  // a put
};

std::optional<Change> decode_change(const rocksdb::Slice& key, const rocksdb::Slice& value) {
  if (key.size() < 1 + 4 + 8) return std::nullopt;
  Change c;
  c.offset = rf::get_be64(bytes(key).data() + key.size() - 8);
  const auto v = bytes(value);
  if (v.size() == 9 && v[0] == rf::kHistoryDelete) {
    c.del = true;
    c.timestamp = rf::get_be64(v.data() + 1);
    return c;
  }
  c.row = rf::decode_row(v);
  if (!c.row) return std::nullopt;
  c.timestamp = c.row->timestamp;
  return c;
}

void put_meta(rocksdb::WriteBatch& wb, std::string_view key, int64_t v) {
  uint8_t buf[8];
  rf::put_be64(buf, v);
  wb.Put(rocksdb::Slice(key.data(), key.size()),
         rocksdb::Slice(reinterpret_cast<const char*>(buf), 8));
}

}  // namespace

void PkState::put_history(rocksdb::WriteBatch& wb, std::string_view row_key,
                          std::string_view encoded, int64_t timestamp, int64_t offset) const {
  if (!options_.table.history || row_key.empty()) return;
  std::string k;
  const auto pk = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(row_key.data()) + 1,
                                           row_key.size() - 1);  // without the 'r'
  rf::append_history_prefix(k, pk);
  k.resize(k.size() + 8);
  rf::put_be64(reinterpret_cast<uint8_t*>(k.data() + k.size() - 8), offset);
  if (!encoded.empty()) {
    wb.Put(k, rocksdb::Slice(encoded.data(), encoded.size()));
    return;
  }
  char del[9];
  del[0] = static_cast<char>(rf::kHistoryDelete);
  rf::put_be64(reinterpret_cast<uint8_t*>(del + 1), timestamp);
  wb.Put(k, rocksdb::Slice(del, sizeof del));
}

Status PkState::load_history_meta() {
  for (auto [key, target] : {std::pair{rf::kHistoryHorizonKey, &hist_horizon_},
                             std::pair{rf::kHistoryWatermarkKey, &hist_watermark_}}) {
    std::string v;
    rocksdb::Status st =
        db_->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &v);
    if (st.IsNotFound()) continue;
    if (!st.ok() || v.size() != 8) {
      return Status(Errc::corruption, path_ + ": bad " + std::string(key) + ": " + st.ToString());
    }
    target->store(rf::get_be64(reinterpret_cast<const uint8_t*>(v.data())));
  }
  return Status::Ok();
}

Result<AsOfResult> PkState::lookup_as_of(std::span<const uint8_t> key, const AsOf& at,
                                         uint64_t* steps) const {
  auto reader = history_reader();
  if (!reader.ok()) return reader.status();
  return reader->lookup(key, at, steps);
}

Result<PkState::HistoryReader> PkState::history_reader() const {
  quiet_perf_context();
  if (!options_.table.history) {
    return Status(Errc::invalid_argument,
                  "the table keeps no history (created without table.history.enabled=true)");
  }
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  return HistoryReader(*this, std::move(lk));
}

PkState::HistoryReader::HistoryReader(const PkState& state,
                                      std::shared_lock<std::shared_mutex> lock)
    : state_(&state), lock_(std::move(lock)) {
  // The iterator's implicit snapshot first, the horizon after: a trim stores its horizon before
  // it deletes, so the horizon read here is at least the one whose deletes the snapshot holds (a
  // newer horizon over older entries is harmless: reads take a key's newest entry below it).
  it_.reset(state.db_->NewIterator(rocksdb::ReadOptions()));
  horizon_ = state.hist_horizon_.load(std::memory_order_acquire);
  watermark_ = state.hist_watermark_.load(std::memory_order_acquire);
}

PkState::HistoryReader::HistoryReader(HistoryReader&&) noexcept = default;
PkState::HistoryReader::~HistoryReader() = default;

Result<AsOfResult> PkState::HistoryReader::lookup(std::span<const uint8_t> key, const AsOf& at,
                                                  uint64_t* steps) {
  const int64_t horizon = horizon_;
  const int64_t watermark = watermark_;
  AsOfResult out;
  const bool by_offset = at.kind == AsOf::Kind::offset;
  if (by_offset && at.at < 0) return out;  // before the first offset: nothing yet
  if (by_offset && horizon > 0 && at.at < horizon - 1) {
    out.out_of_retention = true;
    out.earliest = horizon - 1;
    return out;
  }
  // No iterator bounds (they are fixed per iterator): the walk stops at the first entry that is
  // not this key's.
  std::string& prefix = prefix_;
  prefix.clear();
  rf::append_history_prefix(prefix, key);
  start_.assign(prefix);
  start_.resize(prefix.size() + 8);
  rf::put_be64(reinterpret_cast<uint8_t*>(start_.data() + prefix.size()),
               by_offset ? at.at : std::numeric_limits<int64_t>::max());
  rocksdb::Iterator* it = it_.get();
  std::optional<Change> hit;
  for (it->SeekForPrev(start_); it->Valid(); it->Prev()) {
    const rocksdb::Slice k = it->key();
    if (k.size() != prefix.size() + 8 || !k.starts_with(prefix)) break;
    auto c = decode_change(k, it->value());
    if (!c) return Status(Errc::corruption, state_->path_ + ": malformed history entry");
    if (by_offset) {
      hit = std::move(c);  // the newest at or below the offset
      break;
    }
    if (c->offset < horizon) {
      // Below the horizon only the key's newest change is left: it is the answer when every
      // trimmed change had happened by `at` (at >= the watermark), else the trimmed past might
      // hold it.
      if (at.at >= watermark)
        hit = std::move(c);
      else
        out.out_of_retention = true;
      break;
    }
    if (c->timestamp <= at.at) {
      hit = std::move(c);
      break;
    }
    if (steps && (*steps == 0 || --*steps == 0)) {
      out.truncated = true;
      return out;
    }
  }
  if (!it->status().ok()) return Status(Errc::io_error, it->status().ToString());
  if (!hit && !by_offset && horizon > 0 && at.at < watermark) out.out_of_retention = true;
  if (out.out_of_retention) {
    out.earliest = watermark;
    return out;
  }
  if (!hit || hit->del) return out;  // absent at that point
  if (!by_offset && state_->options_.table.ttl_ms > 0 && state_->expired(*hit->row, at.at))
    return out;
  out.found = true;
  out.value.assign(reinterpret_cast<const char*>(hit->row->value.data()), hit->row->value.size());
  out.offset = hit->offset;
  out.timestamp = hit->timestamp;
  return out;
}

Result<uint64_t> PkState::trim_history_to_log_start() {
  return trim_history(log_.log_start_offset());
}

Result<uint64_t> PkState::trim_history(int64_t horizon) {
  if (!options_.table.history) return uint64_t{0};
  std::lock_guard tl(trim_mu_);
  if (horizon <= hist_horizon_.load()) return uint64_t{0};
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  // Pass 1: the newest timestamp below the new horizon. It is written (with the horizon) before
  // anything is deleted: a crash in between leaves extra entries below the horizon, which reads
  // ignore (they only look at each key's newest one there).
  const std::string lo(1, rf::kHistoryPrefix);
  const std::string hi(1, rf::kHistoryPrefix + 1);
  const rocksdb::Slice lo_s(lo), hi_s(hi);
  rocksdb::ReadOptions ro;
  ro.iterate_lower_bound = &lo_s;
  ro.iterate_upper_bound = &hi_s;
  ro.fill_cache = false;
  int64_t watermark = hist_watermark_.load();
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
    for (it->Seek(lo); it->Valid(); it->Next()) {
      auto c = decode_change(it->key(), it->value());
      if (c && c->offset < horizon) watermark = std::max(watermark, c->timestamp);
    }
    if (!it->status().ok()) return Status(Errc::io_error, it->status().ToString());
  }
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // as every state write: the log replays what a crash loses
  {
    rocksdb::WriteBatch wb;
    put_meta(wb, rf::kHistoryHorizonKey, horizon);
    put_meta(wb, rf::kHistoryWatermarkKey, watermark);
    if (auto st = db_->Write(wo, &wb); !st.ok()) return Status(Errc::io_error, st.ToString());
    note_memtable_write(wb.GetDataSize());  // flushed when idle like any write
  }
  hist_watermark_.store(watermark, std::memory_order_release);
  hist_horizon_.store(horizon, std::memory_order_release);
  // Pass 2: below the horizon, each key keeps its newest change (none when that is a delete:
  // absence needs no entry).
  uint64_t removed = 0;
  rocksdb::WriteBatch wb;
  std::string group;               // the primary key part of the entries in `below`
  std::vector<std::string> below;  // its entries below the horizon, oldest first
  bool newest_is_delete = false;
  auto flush_group = [&]() -> Status {
    for (size_t i = 0; i + 1 < below.size(); ++i) wb.Delete(below[i]);
    removed += below.empty() ? 0 : below.size() - 1;
    if (!below.empty() && newest_is_delete) {
      wb.Delete(below.back());
      ++removed;
    }
    below.clear();
    if (wb.GetDataSize() > kTrimBatchBytes) {
      if (auto st = db_->Write(wo, &wb); !st.ok()) return Status(Errc::io_error, st.ToString());
      note_memtable_write(wb.GetDataSize());
      wb.Clear();
    }
    return Status::Ok();
  };
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro));
  for (it->Seek(lo); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    if (k.size() < 1 + 4 + 8) continue;
    const rocksdb::Slice pk(k.data(), k.size() - 8);
    if (pk != rocksdb::Slice(group)) {
      STRATA_RETURN_IF_ERROR(flush_group());
      group.assign(pk.data(), pk.size());
    }
    auto c = decode_change(k, it->value());
    if (!c || c->offset >= horizon) continue;
    below.emplace_back(k.data(), k.size());
    newest_is_delete = c->del;
  }
  STRATA_RETURN_IF_ERROR(flush_group());
  if (!it->status().ok()) return Status(Errc::io_error, it->status().ToString());
  if (wb.Count() > 0) {
    if (auto st = db_->Write(wo, &wb); !st.ok()) return Status(Errc::io_error, st.ToString());
    note_memtable_write(wb.GetDataSize());
  }
  return removed;
}

}  // namespace strata::pkindex
