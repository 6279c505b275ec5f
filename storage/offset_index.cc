// Kafka-format sparse offset index (see offset_index.h).
#include "storage/offset_index.h"

#include <algorithm>

#include "protocol/record/byte_order.h"
#include "storage/file_util.h"

namespace strata::storage {

using protocol::detail::load_be;
using protocol::detail::store_be;

Result<std::unique_ptr<OffsetIndex>> OffsetIndex::open(Env* env, const std::string& path,
                                                       int64_t base_offset, int32_t max_index_bytes,
                                                       bool load, uint64_t log_size) {
  std::vector<Entry> entries;
  bool ok = false;
  if (load && env->file_exists(path)) {
    auto data = read_file_to_string(env, path);
    if (!data.ok()) return data.status();
    ok = data->size() % kEntrySize == 0;
    const auto* p = reinterpret_cast<const uint8_t*>(data->data());
    for (size_t i = 0; ok && i < data->size(); i += kEntrySize) {
      int64_t off = base_offset + load_be<int32_t>(p + i);
      int32_t pos = load_be<int32_t>(p + i + 4);
      if (pos < 0 || static_cast<uint64_t>(pos) >= log_size || off < base_offset ||
          (!entries.empty() && (off <= entries.back().offset ||
                                static_cast<uint32_t>(pos) <= entries.back().position))) {
        ok = false;
        break;
      }
      entries.push_back({off, static_cast<uint32_t>(pos)});
    }
  }
  if (!ok) entries.clear();
  auto file = env->new_writable_file(path, /*truncate=*/!ok);
  if (!file.ok()) return file.status();
  size_t max_entries = std::max<size_t>(1, static_cast<size_t>(max_index_bytes) / kEntrySize);
  std::unique_ptr<OffsetIndex> index(new OffsetIndex(std::move(*file), base_offset, max_entries));
  index->entries_ = std::move(entries);
  index->loaded_ok_ = ok;
  return index;
}

Status OffsetIndex::append(int64_t offset, uint32_t position) {
  if (!entries_.empty() && offset <= entries_.back().offset) return Status::Ok();
  uint8_t buf[kEntrySize];
  store_be<int32_t>(buf, static_cast<int32_t>(offset - base_offset_));
  store_be<int32_t>(buf + 4, static_cast<int32_t>(position));
  Status st = file_->append(buf);
  if (!st.ok()) return undo_partial_append(*file_, entries_.size() * kEntrySize, std::move(st));
  entries_.push_back({offset, position});
  return Status::Ok();
}

OffsetIndex::Entry OffsetIndex::lookup(int64_t target) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), target,
                             [](int64_t t, const Entry& e) { return t < e.offset; });
  if (it == entries_.begin()) return {base_offset_, 0};
  return *(it - 1);
}

Status OffsetIndex::truncate_to_position(uint64_t log_position) {
  size_t keep = entries_.size();
  while (keep > 0 && entries_[keep - 1].position >= log_position) --keep;
  if (keep == entries_.size()) return Status::Ok();
  entries_.resize(keep);
  return file_->truncate(keep * kEntrySize);
}

Status OffsetIndex::reset() {
  entries_.clear();
  return file_->truncate(0);
}

}  // namespace strata::storage
