// Writing a cleaned segment next to the live one (see cleaned_segment.h).
#include "storage/cleaner/cleaned_segment.h"

#include "protocol/record/record_batch.h"
#include "storage/file_names.h"

namespace strata::storage::cleaner {

Result<std::unique_ptr<CleanedSegmentWriter>> CleanedSegmentWriter::create(
    Env* env, const std::string& dir, int64_t base_offset, const LogConfig& config,
    std::shared_ptr<const BatchSummarizer> summarizer) {
  std::unique_ptr<CleanedSegmentWriter> w(
      new CleanedSegmentWriter(env, dir, base_offset, config.index_interval_bytes));
  w->summarizer_ = std::move(summarizer);
  const std::string suffix(kCleanedSuffix);
  auto log = env->new_writable_file(segment_log_path(dir, base_offset) + suffix, true);
  if (!log.ok()) return log.status();
  w->log_ = std::move(*log);
  auto oi = OffsetIndex::open(env, segment_index_path(dir, base_offset) + suffix, base_offset,
                              config.max_index_bytes, /*load=*/false, 0);
  if (!oi.ok()) return oi.status();
  w->offset_index_ = std::move(*oi);
  auto ti = TimeIndex::open(env, segment_time_index_path(dir, base_offset) + suffix, base_offset,
                            config.max_index_bytes, /*load=*/false, base_offset);
  if (!ti.ok()) return ti.status();
  w->time_index_ = std::move(*ti);
  return w;
}

CleanedSegmentWriter::~CleanedSegmentWriter() {
  if (!closed_) (void)abandon();
}

Status CleanedSegmentWriter::append(std::span<const uint8_t> batch) {
  protocol::RecordBatchView v(batch);
  const uint64_t position = size_;
  STRATA_RETURN_IF_ERROR(log_->append(batch));
  size_ += batch.size();
  if (v.max_timestamp() > max_timestamp_) {
    max_timestamp_ = v.max_timestamp();
    offset_of_max_timestamp_ = v.last_offset();
  }
  if (bytes_since_last_index_ > static_cast<uint64_t>(index_interval_bytes_) &&
      !offset_index_->full() && !time_index_->full()) {
    STRATA_RETURN_IF_ERROR(offset_index_->append(v.last_offset(), static_cast<uint32_t>(position)));
    STRATA_RETURN_IF_ERROR(time_index_->maybe_append(max_timestamp_, offset_of_max_timestamp_));
    bytes_since_last_index_ = 0;
  }
  bytes_since_last_index_ += batch.size();
  if (summarizer_) {
    if (auto payload = (*summarizer_)(batch)) {
      BatchSummary s;
      s.base_offset = v.base_offset();
      s.last_offset = v.last_offset();
      s.position = position;
      s.size = static_cast<uint32_t>(batch.size());
      s.batch_crc = v.crc();
      s.payload = std::move(*payload);
      summaries_ += encode_batch_summary(s);
    }
  }
  return Status::Ok();
}

Status CleanedSegmentWriter::finish() {
  if (max_timestamp_ >= 0 && !time_index_->full()) {
    auto last = time_index_->last_entry();
    if (!last || last->timestamp < max_timestamp_) {
      STRATA_RETURN_IF_ERROR(time_index_->maybe_append(max_timestamp_, offset_of_max_timestamp_));
    }
  }
  if (!summaries_.empty()) {
    auto f = env_->new_writable_file(
        segment_summary_path(dir_, base_) + std::string(kCleanedSuffix), true);
    if (!f.ok()) return f.status();
    STRATA_RETURN_IF_ERROR(
        (*f)->append({reinterpret_cast<const uint8_t*>(summaries_.data()), summaries_.size()}));
    STRATA_RETURN_IF_ERROR((*f)->close());
  }
  STRATA_RETURN_IF_ERROR(log_->sync());
  STRATA_RETURN_IF_ERROR(offset_index_->sync());
  STRATA_RETURN_IF_ERROR(time_index_->sync());
  closed_ = true;
  STRATA_RETURN_IF_ERROR(log_->close());
  STRATA_RETURN_IF_ERROR(offset_index_->close());
  return time_index_->close();
}

Status CleanedSegmentWriter::abandon() {
  if (!closed_) {
    closed_ = true;
    if (log_) (void)log_->close();
    if (offset_index_) (void)offset_index_->close();
    if (time_index_) (void)time_index_->close();
  }
  const std::string suffix(kCleanedSuffix);
  Status first = Status::Ok();
  for (const auto& p :
       {segment_log_path(dir_, base_) + suffix, segment_index_path(dir_, base_) + suffix,
        segment_time_index_path(dir_, base_) + suffix}) {
    Status st = env_->remove_file(p);
    if (!st.ok() && st.code() != Errc::not_found && first.ok()) first = st;
  }
  if (const auto stats = segment_summary_path(dir_, base_) + suffix; env_->file_exists(stats)) {
    Status st = env_->remove_file(stats);
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

}  // namespace strata::storage::cleaner
