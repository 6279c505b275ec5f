// PartitionLog's batch summaries: the `.stats` side index of each segment (batch_summary.h).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "protocol/record/batch_format.h"
#include "protocol/record/byte_order.h"
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"

namespace strata::storage {

namespace bf = protocol::batch_format;
using protocol::detail::load_be;

void PartitionLog::set_batch_summarizer(std::shared_ptr<const BatchSummarizer> summarizer) {
  std::lock_guard lk(append_mu_);
  summarizer_ = std::move(summarizer);
  summary_writer_.reset();
  summary_segment_.reset();
  if (summarizer_ && !closed_ && !deleted_ && !failed_) backfill_summaries_locked();
}

void PartitionLog::seal_summaries_locked() {
  if (!summary_writer_) return;
  if (summary_segment_.lock() == segments_.back()) {
    if (Status st = summary_writer_->sync(); !st.ok()) {
      spdlog::warn("{}: batch summaries of segment {} not synced: {}", dir_,
                   segments_.back()->base_offset(), st.to_string());
    }
  }
  summary_writer_.reset();
  summary_segment_.reset();
}

void PartitionLog::backfill_summaries_locked() {
  const std::shared_ptr<Segment> seg = segments_.back();
  if (seg->empty() || seg->next_offset() <= log_start_offset()) return;
  auto sums = batch_summaries(std::max(seg->base_offset(), log_start_offset()), INT64_MAX);
  if (!sums.ok() || sums->too_large) return;
  uint64_t pos = 0;  // the first batch after the last summarised one that checks out
  for (auto it = sums->entries.rbegin(); it != sums->entries.rend(); ++it) {
    if (check_batch_summary(*sums->file, *it)) {
      pos = it->position + it->size;
      break;
    }
  }
  std::vector<BatchInfo> missing;
  {
    std::shared_lock<std::shared_mutex> state(state_mu_);
    while (pos < seg->size()) {
      auto b = seg->batch_at(pos);
      if (!b.ok() || !*b) break;
      missing.push_back(**b);
      pos += (*b)->size;
    }
  }
  std::vector<uint8_t> bytes;
  for (const auto& b : missing) {
    bytes.resize(b.size);
    auto n = seg->log_file()->read(b.position, b.size, bytes.data());
    if (!n.ok() || *n != b.size) return;  // a summary is never worth an error
    summarize_locked(seg, b, bytes);
  }
  if (!missing.empty()) {
    spdlog::info("{}: summarised {} batch(es) of segment {} that had no summary", dir_,
                 missing.size(), seg->base_offset());
  }
}

void PartitionLog::summarize_locked(const std::shared_ptr<Segment>& seg, const BatchInfo& info,
                                    std::span<const uint8_t> batch) {
  std::optional<std::string> payload = (*summarizer_)(batch);
  if (!payload) return;
  if (summary_segment_.lock() != seg || !summary_writer_) {  // the active segment changed
    summary_writer_.reset();
    // Continue after the file's valid prefix: entries written after a torn one (a crash, a
    // failed write) would never be read.
    const std::string path = segment_summary_path(dir_, seg->base_offset());
    if (auto size = env_->file_size(path); size.ok() && *size > kMaxSummaryFileBytes) {
      return;  // never read (batch_summaries): writing more would only cost
    }
    if (auto text = read_file_to_string(env_, path); text.ok()) {
      size_t valid = 0;
      decode_batch_summaries({reinterpret_cast<const uint8_t*>(text->data()), text->size()},
                             &valid);
      if (valid < text->size() && !env_->truncate_file(path, valid).ok()) return;
    }
    auto w = env_->new_writable_file(path, /*truncate=*/false);
    if (!w.ok()) {
      spdlog::warn("{}: no batch summaries for segment {}: {}", dir_, seg->base_offset(),
                   w.status().to_string());
      return;
    }
    summary_writer_ = std::move(*w);
    summary_segment_ = seg;
  }
  BatchSummary s;
  s.base_offset = info.base_offset;
  s.last_offset = info.last_offset;
  s.position = info.position;
  s.size = info.size;
  s.batch_crc = load_be<uint32_t>(batch.data() + bf::kCrcOffset);
  s.payload = std::move(*payload);
  const std::string entry = encode_batch_summary(s);
  Status st =
      summary_writer_->append({reinterpret_cast<const uint8_t*>(entry.data()), entry.size()});
  if (!st.ok()) {
    spdlog::warn("{}: batch summary of segment {} not written: {}", dir_, seg->base_offset(),
                 st.to_string());
    summary_writer_.reset();  // the next one cuts the partial entry and continues
  }
}

Result<SegmentSummaries> PartitionLog::batch_summaries(int64_t offset, int64_t upper_bound) const {
  SegmentSummaries out;
  uint64_t segment_size = 0;
  {
    std::shared_lock<std::shared_mutex> state(state_mu_);
    const int64_t leo = log_end_offset();
    if (offset < log_start_offset() || offset >= leo) {
      return Status(Errc::out_of_range, "offset " + std::to_string(offset) + " outside [" +
                                            std::to_string(log_start_offset()) + ", " +
                                            std::to_string(leo) + ")");
    }
    const Segment& seg = *segments_[segment_index_for(offset)];
    out.segment_base = seg.base_offset();
    out.segment_end = seg.next_offset();
    out.file = seg.log_file();
    segment_size = seg.size();
  }
  const std::string path = segment_summary_path(dir_, out.segment_base);
  auto size = env_->file_size(path);
  if (!size.ok()) return out;  // none
  if (*size > kMaxSummaryFileBytes) {
    out.too_large = true;  // too many to read: the segment's batches are read, not skipped
    return out;
  }
  auto text = read_file_to_string(env_, path);
  if (!text.ok()) return out;
  out.file_bytes = text->size();
  // Later entries of a base replace earlier ones (a batch written again after a truncation).
  std::map<int64_t, BatchSummary> by_base;
  for (auto& s :
       decode_batch_summaries({reinterpret_cast<const uint8_t*>(text->data()), text->size()})) {
    if (s.last_offset < offset || s.last_offset >= upper_bound || s.base_offset > s.last_offset ||
        s.base_offset < out.segment_base || s.size < bf::kHeaderSize || s.position > segment_size ||
        s.size > segment_size - s.position) {
      continue;
    }
    const int64_t base = s.base_offset;
    by_base[base] = std::move(s);
  }
  out.entries.reserve(by_base.size());
  for (auto& [base, s] : by_base) out.entries.push_back(std::move(s));
  return out;
}

}  // namespace strata::storage
