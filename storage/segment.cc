// A segment's files, append, lookups and recovery (see segment.h).
#include "storage/segment.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "protocol/record/batch_format.h"
#include "protocol/record/record_batch.h"
#include "storage/file_names.h"
#include "storage/record_search.h"

namespace strata::storage {
namespace bf = protocol::batch_format;

namespace {

BatchInfo info_from_header(const uint8_t* header, uint64_t position) {
  protocol::RecordBatchView v({header, bf::kHeaderSize});
  BatchInfo b;
  b.position = position;
  b.size = static_cast<uint32_t>(v.batch_length()) + static_cast<uint32_t>(bf::kLogOverhead);
  b.base_offset = v.base_offset();
  b.last_offset = v.last_offset();
  b.max_timestamp = v.max_timestamp();
  b.leader_epoch = v.partition_leader_epoch();
  b.record_count = v.record_count();
  return b;
}

// Sequential reader over a .log file with a large buffer (recovery reads whole batches).
class ChunkReader {
 public:
  explicit ChunkReader(const RandomAccessFile& file) : file_(file) {}
  // Returns a view of [pos, pos + n) or an error; the view lives until the next call.
  Result<std::span<const uint8_t>> get(uint64_t pos, size_t n) {
    if (pos < start_ || pos + n > start_ + len_) {
      size_t want = std::max<size_t>(n, kChunk);
      if (buf_.size() < want) buf_.resize(want);
      auto got = file_.read(pos, want, buf_.data());
      if (!got.ok()) return got.status();
      start_ = pos;
      len_ = *got;
      if (len_ < n) return Status(Errc::corruption, "short read");
    }
    return std::span<const uint8_t>(buf_.data() + (pos - start_), n);
  }

 private:
  static constexpr size_t kChunk = 1 << 20;
  const RandomAccessFile& file_;
  std::vector<uint8_t> buf_;
  uint64_t start_ = 0;
  size_t len_ = 0;
};

}  // namespace

Result<std::shared_ptr<Segment>> Segment::create(Env* env, const std::string& dir,
                                                 int64_t base_offset, const LogConfig& config) {
  std::shared_ptr<Segment> seg(new Segment(env, dir, base_offset));
  seg->index_interval_bytes_ = config.index_interval_bytes;
  auto writer = env->new_writable_file(segment_log_path(dir, base_offset), /*truncate=*/true);
  if (!writer.ok()) return writer.status();
  seg->writer_ = std::move(*writer);
  auto reader = env->new_random_access_file(segment_log_path(dir, base_offset));
  if (!reader.ok()) return reader.status();
  seg->reader_ = std::move(*reader);
  auto oi = OffsetIndex::open(env, segment_index_path(dir, base_offset), base_offset,
                              config.max_index_bytes, /*load=*/false, 0);
  if (!oi.ok()) return oi.status();
  seg->offset_index_ = std::move(*oi);
  auto ti = TimeIndex::open(env, segment_time_index_path(dir, base_offset), base_offset,
                            config.max_index_bytes, /*load=*/false, base_offset);
  if (!ti.ok()) return ti.status();
  seg->time_index_ = std::move(*ti);
  // Every segment has an aborted-transaction index (empty until an ABORT marker), so a missing
  // one means it was lost and is rebuilt at open (PartitionLog).
  auto txn = env->new_writable_file(segment_txn_index_path(dir, base_offset), /*truncate=*/true);
  if (!txn.ok()) return txn.status();
  STRATA_RETURN_IF_ERROR((*txn)->close());
  // Summaries of an earlier segment of this base (a truncated or reset log) describe batches
  // that are gone.
  if (const auto stats = segment_summary_path(dir, base_offset); env->file_exists(stats)) {
    STRATA_RETURN_IF_ERROR(env->remove_file(stats));
  }
  return seg;
}

Result<std::shared_ptr<Segment>> Segment::open(Env* env, const std::string& dir,
                                               int64_t base_offset, const LogConfig& config,
                                               OpenMode mode, int64_t now_ms) {
  std::shared_ptr<Segment> seg(new Segment(env, dir, base_offset));
  seg->index_interval_bytes_ = config.index_interval_bytes;
  auto writer = env->new_writable_file(segment_log_path(dir, base_offset), /*truncate=*/false);
  if (!writer.ok()) return writer.status();
  seg->writer_ = std::move(*writer);
  auto reader = env->new_random_access_file(segment_log_path(dir, base_offset));
  if (!reader.ok()) return reader.status();
  seg->reader_ = std::move(*reader);
  Status st = mode == OpenMode::trust ? seg->load_trusted(config) : seg->recover(config);
  if (!st.ok()) return st;
  if (!seg->empty()) {
    // Roll-by-time base: the first batch's max timestamp when plausible, else the open time.
    auto first = seg->batch_at(0);
    if (!first.ok()) return first.status();
    int64_t ts = (*first) ? (*first)->max_timestamp : -1;
    seg->rolling_base_ms_ = (ts > 0 && ts <= now_ms) ? ts : now_ms;
  }
  return seg;
}

Status Segment::load_trusted(const LogConfig& config) {
  const uint64_t file_size = writer_->size();
  auto oi = OffsetIndex::open(env_, segment_index_path(dir_, base_offset_), base_offset_,
                              config.max_index_bytes, /*load=*/true, file_size);
  if (!oi.ok()) return oi.status();
  offset_index_ = std::move(*oi);
  if (!offset_index_->loaded_ok() && file_size > 0) {
    offset_index_.reset();
    return recover(config);
  }
  // Scan batch headers after the last index entry to find the end of the segment.
  uint64_t pos = offset_index_->entries().empty() ? 0 : offset_index_->entries().back().position;
  std::vector<BatchInfo> tail;
  while (pos < file_size) {
    auto h = read_header(pos, file_size);
    if (!h.ok()) {  // not what a flushed segment looks like: validate it all
      offset_index_.reset();
      return recover(config);
    }
    tail.push_back(*h);
    pos += h->size;
  }
  size_ = file_size;
  next_offset_ = tail.empty() ? base_offset_ : tail.back().last_offset + 1;
  if (tail.empty() && !offset_index_->entries().empty()) {
    offset_index_.reset();
    return recover(config);
  }
  auto ti = TimeIndex::open(env_, segment_time_index_path(dir_, base_offset_), base_offset_,
                            config.max_index_bytes, /*load=*/true, next_offset_);
  if (!ti.ok()) return ti.status();
  time_index_ = std::move(*ti);
  if (!time_index_->loaded_ok() && file_size > 0) {
    offset_index_.reset();
    time_index_.reset();
    return recover(config);
  }
  if (auto last = time_index_->last_entry()) {
    max_timestamp_ = last->timestamp;
    offset_of_max_timestamp_ = last->offset;
  }
  bool first_is_indexed = !offset_index_->entries().empty();
  bytes_since_last_index_ = 0;
  for (size_t i = 0; i < tail.size(); ++i) {
    if (i == 0 && first_is_indexed) {
      if (tail[0].max_timestamp > max_timestamp_) {
        max_timestamp_ = tail[0].max_timestamp;
        offset_of_max_timestamp_ = tail[0].last_offset;
      }
      bytes_since_last_index_ += tail[0].size;
      continue;
    }
    STRATA_RETURN_IF_ERROR(index_batch(tail[i]));
  }
  return Status::Ok();
}

Status Segment::recover(const LogConfig& config) {
  const uint64_t file_size = writer_->size();
  if (!offset_index_) {
    auto oi = OffsetIndex::open(env_, segment_index_path(dir_, base_offset_), base_offset_,
                                config.max_index_bytes, /*load=*/false, 0);
    if (!oi.ok()) return oi.status();
    offset_index_ = std::move(*oi);
  } else {
    STRATA_RETURN_IF_ERROR(offset_index_->reset());
  }
  auto ti = TimeIndex::open(env_, segment_time_index_path(dir_, base_offset_), base_offset_,
                            config.max_index_bytes, /*load=*/false, base_offset_);
  if (!ti.ok()) return ti.status();
  time_index_ = std::move(*ti);
  max_timestamp_ = -1;
  offset_of_max_timestamp_ = -1;
  bytes_since_last_index_ = 0;
  next_offset_ = base_offset_;

  ChunkReader chunks(*reader_);
  uint64_t pos = 0;
  while (pos < file_size) {
    if (file_size - pos < bf::kHeaderSize) break;
    auto header = chunks.get(pos, bf::kHeaderSize);
    if (!header.ok()) return header.status();
    BatchInfo b = info_from_header(header->data(), pos);
    int32_t batch_length = static_cast<int32_t>(b.size - bf::kLogOverhead);
    if (batch_length < static_cast<int32_t>(bf::kHeaderSize - bf::kLogOverhead) ||
        b.size > file_size - pos) {
      break;
    }
    auto bytes = chunks.get(pos, b.size);
    if (!bytes.ok()) return bytes.status();
    if (protocol::RecordBatchView(*bytes).validate() != protocol::BatchCheck::ok) break;
    if (b.base_offset < next_offset_ || b.last_offset < b.base_offset ||
        b.last_offset - base_offset_ > std::numeric_limits<int32_t>::max()) {
      break;
    }
    STRATA_RETURN_IF_ERROR(index_batch(b));
    next_offset_ = b.last_offset + 1;
    pos += b.size;
  }
  size_ = pos;
  if (pos < file_size) {
    truncated_bytes_ = file_size - pos;
    STRATA_RETURN_IF_ERROR(writer_->truncate(pos));
  }
  if (max_timestamp_ < 0) return Status::Ok();
  return time_index_->maybe_append(max_timestamp_, offset_of_max_timestamp_);
}

Status Segment::index_batch(const BatchInfo& b) {
  if (b.max_timestamp > max_timestamp_) {
    max_timestamp_ = b.max_timestamp;
    offset_of_max_timestamp_ = b.last_offset;
  }
  if (bytes_since_last_index_ > static_cast<uint64_t>(index_interval_bytes_)) {
    STRATA_RETURN_IF_ERROR(offset_index_->append(b.last_offset, static_cast<uint32_t>(b.position)));
    STRATA_RETURN_IF_ERROR(time_index_->maybe_append(max_timestamp_, offset_of_max_timestamp_));
    bytes_since_last_index_ = 0;
  }
  bytes_since_last_index_ += b.size;
  return Status::Ok();
}

bool Segment::should_roll(const LogConfig& config, uint32_t batch_size, int64_t last_offset,
                          int64_t now_ms) const {
  if (empty()) return false;
  if (static_cast<int64_t>(size_) + batch_size > config.segment_bytes) return true;
  if (rolling_base_ms_ >= 0 && now_ms - rolling_base_ms_ > config.segment_ms) return true;
  if (offset_index_->full() || time_index_->full()) return true;
  return last_offset - base_offset_ > std::numeric_limits<int32_t>::max();
}

Result<uint64_t> Segment::write(std::span<const uint8_t> batch) {
  if (sealed_) return Status(Errc::invalid_argument, "append to a sealed segment");
  uint64_t pos = writer_->size();
  Status st = writer_->append(batch);
  if (!st.ok()) return undo_partial_append(*writer_, pos, std::move(st));
  return pos;
}

Status Segment::truncate_uncommitted(uint64_t position) { return writer_->truncate(position); }

Status Segment::commit(const BatchInfo& batch, int64_t now_ms) {
  const int64_t rolling_base = rolling_base_ms_;
  const uint64_t since_index = bytes_since_last_index_;
  const int64_t max_ts = max_timestamp_;
  const int64_t max_ts_offset = offset_of_max_timestamp_;
  if (empty()) rolling_base_ms_ = now_ms;
  Status st = index_batch(batch);
  if (!st.ok()) {
    // Back to the state before this batch: the offset-index entry may have been written before
    // the time-index write failed (each index already cut off its own partial entry).
    rolling_base_ms_ = rolling_base;
    bytes_since_last_index_ = since_index;
    max_timestamp_ = max_ts;
    offset_of_max_timestamp_ = max_ts_offset;
    Status undo = offset_index_->truncate_to_position(batch.position);
    if (!undo.ok()) {
      return Status(Errc::io_error,
                    st.message() + "; rolling back the index failed: " + undo.message());
    }
    return st;
  }
  size_ = batch.position + batch.size;
  next_offset_ = batch.last_offset + 1;
  return Status::Ok();
}

Status Segment::sync_log() { return sealed_ ? Status::Ok() : writer_->sync(); }

Status Segment::sync_indexes() {
  if (sealed_) return Status::Ok();
  STRATA_RETURN_IF_ERROR(offset_index_->sync());
  return time_index_->sync();
}

Status Segment::finalize_time_index() {
  if (sealed_ || max_timestamp_ < 0) return Status::Ok();
  auto last = time_index_->last_entry();
  if (last && last->timestamp >= max_timestamp_) return Status::Ok();
  time_index_dirty_ = true;
  return time_index_->maybe_append(max_timestamp_, offset_of_max_timestamp_);
}

Status Segment::seal(bool sync) {
  if (sealed_) return Status::Ok();
  STRATA_RETURN_IF_ERROR(finalize_time_index());
  if (time_index_dirty_) sync = true;
  if (sync) {
    STRATA_RETURN_IF_ERROR(sync_log());
    STRATA_RETURN_IF_ERROR(sync_indexes());
  }
  sealed_ = true;
  STRATA_RETURN_IF_ERROR(writer_->close());
  STRATA_RETURN_IF_ERROR(offset_index_->close());
  return time_index_->close();
}

Status Segment::close() { return seal(); }

Status Segment::remove_files() {
  if (!sealed_) {
    (void)writer_->close();
    (void)offset_index_->close();
    (void)time_index_->close();
    sealed_ = true;
  }
  for (const auto& p :
       {segment_log_path(dir_, base_offset_), segment_index_path(dir_, base_offset_),
        segment_time_index_path(dir_, base_offset_), segment_txn_index_path(dir_, base_offset_)}) {
    Status st = env_->remove_file(p);
    if (!st.ok() && st.code() != Errc::not_found) return st;
  }
  // Only tables with column statistics have one (batch_summary.h).
  if (const auto stats = segment_summary_path(dir_, base_offset_); env_->file_exists(stats)) {
    STRATA_RETURN_IF_ERROR(env_->remove_file(stats));
  }
  return Status::Ok();
}

Result<BatchInfo> Segment::read_header(uint64_t position, uint64_t limit) const {
  if (limit - position < bf::kHeaderSize) {
    return Status(Errc::corruption, "truncated batch header in " + reader_->path());
  }
  uint8_t header[bf::kHeaderSize];
  auto n = reader_->read(position, sizeof(header), header);
  if (!n.ok()) return n.status();
  if (*n < sizeof(header)) return Status(Errc::corruption, "short read in " + reader_->path());
  BatchInfo b = info_from_header(header, position);
  if (b.size < bf::kHeaderSize || b.size > limit - position || b.last_offset < b.base_offset) {
    return Status(Errc::corruption, "bad batch header in " + reader_->path());
  }
  return b;
}

Result<std::vector<uint8_t>> Segment::read_batch(const BatchInfo& b) const {
  std::vector<uint8_t> bytes(b.size);
  auto n = reader_->read(b.position, b.size, bytes.data());
  if (!n.ok()) return n.status();
  if (*n != b.size) return Status(Errc::corruption, "short read in " + reader_->path());
  return bytes;
}

Result<std::optional<BatchInfo>> Segment::batch_at(uint64_t position) const {
  if (position >= size_) return std::optional<BatchInfo>();
  auto b = read_header(position, size_);
  if (!b.ok()) return b.status();
  return std::optional<BatchInfo>(*b);
}

Result<std::optional<BatchInfo>> Segment::find_batch(int64_t offset) const {
  if (offset >= next_offset_) return std::optional<BatchInfo>();
  uint64_t pos = offset_index_->lookup(offset).position;
  while (pos < size_) {
    auto b = read_header(pos, size_);
    if (!b.ok()) return b.status();
    if (b->last_offset >= offset) return std::optional<BatchInfo>(*b);
    pos += b->size;
  }
  return std::optional<BatchInfo>();
}

Result<std::optional<TimestampAndOffset>> Segment::find_offset_for_timestamp(
    int64_t target, int64_t min_offset) const {
  using Out = std::optional<TimestampAndOffset>;
  if (max_timestamp_ < target || min_offset >= next_offset_) return Out();
  int64_t start = std::max(min_offset, base_offset_);
  if (auto e = time_index_->last_before(target)) start = std::max(start, e->offset + 1);
  uint64_t pos = offset_index_->lookup(start).position;
  while (pos < size_) {
    auto b = read_header(pos, size_);
    if (!b.ok()) return b.status();
    pos += b->size;
    if (b->last_offset < start || b->max_timestamp < target) continue;
    auto bytes = read_batch(*b);
    if (!bytes.ok()) return bytes.status();
    auto hit = find_record_at_or_after(*bytes, target, start);
    if (!hit.ok()) return hit.status();
    if (*hit) return Out(TimestampAndOffset{(*hit)->offset, (*hit)->timestamp, b->leader_epoch});
  }
  return Out();
}

Result<std::optional<TimestampAndOffset>> Segment::max_timestamp_record() const {
  using Out = std::optional<TimestampAndOffset>;
  if (max_timestamp_ < 0 || empty()) return Out();
  auto b = find_batch(offset_of_max_timestamp_);
  if (!b.ok()) return b.status();
  if (!*b) return Out();
  auto bytes = read_batch(**b);
  if (!bytes.ok()) return bytes.status();
  auto hit = find_max_timestamp_record(*bytes);
  if (!hit.ok()) return hit.status();
  if (!*hit) return Out();
  return Out(TimestampAndOffset{(*hit)->offset, (*hit)->timestamp, (*b)->leader_epoch});
}

}  // namespace strata::storage
