// Kafka-format sparse time index (see time_index.h).
#include "storage/time_index.h"

#include <algorithm>

#include "protocol/record/byte_order.h"
#include "storage/file_util.h"

namespace strata::storage {

using protocol::detail::load_be;
using protocol::detail::store_be;

Result<std::unique_ptr<TimeIndex>> TimeIndex::open(Env* env, const std::string& path,
                                                   int64_t base_offset, int32_t max_index_bytes,
                                                   bool load, int64_t next_offset) {
  std::vector<Entry> entries;
  bool ok = false;
  if (load && env->file_exists(path)) {
    auto data = read_file_to_string(env, path);
    if (!data.ok()) return data.status();
    ok = data->size() % kEntrySize == 0;
    const auto* p = reinterpret_cast<const uint8_t*>(data->data());
    for (size_t i = 0; ok && i < data->size(); i += kEntrySize) {
      int64_t ts = load_be<int64_t>(p + i);
      int64_t off = base_offset + load_be<int32_t>(p + i + 8);
      if (off < base_offset || off >= next_offset ||
          (!entries.empty() && (ts <= entries.back().timestamp || off < entries.back().offset))) {
        ok = false;
        break;
      }
      entries.push_back({ts, off});
    }
  }
  if (!ok) entries.clear();
  auto file = env->new_writable_file(path, /*truncate=*/!ok);
  if (!file.ok()) return file.status();
  size_t max_entries = std::max<size_t>(1, static_cast<size_t>(max_index_bytes) / kEntrySize);
  std::unique_ptr<TimeIndex> index(new TimeIndex(std::move(*file), base_offset, max_entries));
  index->entries_ = std::move(entries);
  index->loaded_ok_ = ok;
  return index;
}

Status TimeIndex::maybe_append(int64_t timestamp, int64_t offset) {
  if (!entries_.empty() &&
      (timestamp <= entries_.back().timestamp || offset < entries_.back().offset)) {
    return Status::Ok();
  }
  uint8_t buf[kEntrySize];
  store_be<int64_t>(buf, timestamp);
  store_be<int32_t>(buf + 8, static_cast<int32_t>(offset - base_offset_));
  Status st = file_->append(buf);
  if (!st.ok()) return undo_partial_append(*file_, entries_.size() * kEntrySize, std::move(st));
  entries_.push_back({timestamp, offset});
  return Status::Ok();
}

std::optional<TimeIndex::Entry> TimeIndex::last_before(int64_t target) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), target,
                             [](const Entry& e, int64_t t) { return e.timestamp < t; });
  if (it == entries_.begin()) return std::nullopt;
  return *(it - 1);
}

std::optional<TimeIndex::Entry> TimeIndex::last_entry() const {
  if (entries_.empty()) return std::nullopt;
  return entries_.back();
}

Status TimeIndex::truncate_to_offset(int64_t next_offset) {
  size_t keep = entries_.size();
  while (keep > 0 && entries_[keep - 1].offset >= next_offset) --keep;
  if (keep == entries_.size()) return Status::Ok();
  entries_.resize(keep);
  return file_->truncate(keep * kEntrySize);
}

Status TimeIndex::reset() {
  entries_.clear();
  return file_->truncate(0);
}

}  // namespace strata::storage
