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
}

void PartitionLog::summarize_locked(const std::shared_ptr<Segment>& seg, const BatchInfo& info,
                                    std::span<const uint8_t> batch) {
  std::optional<std::string> payload = (*summarizer_)(batch);
  if (!payload) return;
  if (summary_segment_.lock() != seg || !summary_writer_) {  // the active segment changed
    summary_writer_.reset();
    auto w = env_->new_writable_file(segment_summary_path(dir_, seg->base_offset()),
                                     /*truncate=*/false);
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
    // A partial entry ends the file's valid prefix: later batches of this segment go unsummarised
    // (read, not skipped) rather than be written after a gap nobody would read past.
    spdlog::warn("{}: batch summaries of segment {} stop here: {}", dir_, seg->base_offset(),
                 st.to_string());
    summary_writer_.reset();
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
  if (!size.ok() || *size > kMaxSummaryFileBytes) return out;  // none, or too many to read
  auto text = read_file_to_string(env_, path);
  if (!text.ok()) return out;
  // Later entries of a base replace earlier ones (a batch written again after a truncation).
  std::map<int64_t, BatchSummary> by_base;
  for (auto& s :
       decode_batch_summaries({reinterpret_cast<const uint8_t*>(text->data()), text->size()})) {
    if (s.last_offset < offset || s.last_offset >= upper_bound || s.base_offset > s.last_offset ||
        s.base_offset < out.segment_base || s.size < bf::kHeaderSize ||
        s.position + s.size > segment_size) {
      continue;
    }
    const int64_t base = s.base_offset;
    by_base[base] = std::move(s);
  }
  uint8_t h[bf::kRecordsOffset];
  for (auto& [base, s] : by_base) {
    // Only a summary of the batch really at its position counts (batch_summary.h).
    auto n = out.file->read(s.position, sizeof(h), h);
    if (!n.ok()) return n.status();
    if (*n != sizeof(h) || load_be<int64_t>(h + bf::kBaseOffsetOffset) != base ||
        load_be<int32_t>(h + bf::kBatchLengthOffset) + bf::kLogOverhead != s.size ||
        load_be<uint32_t>(h + bf::kCrcOffset) != s.batch_crc ||
        base + load_be<int32_t>(h + bf::kLastOffsetDeltaOffset) != s.last_offset) {
      continue;
    }
    out.entries.push_back(std::move(s));
  }
  return out;
}

}  // namespace strata::storage
