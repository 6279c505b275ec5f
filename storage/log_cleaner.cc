// One compaction pass over a partition log (see log_cleaner.h).
#include "storage/log_cleaner.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/record/batch_format.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"
#include "storage/aborted_filter.h"
#include "storage/cleaner/batch_filter.h"
#include "storage/cleaner/cleaned_segment.h"
#include "storage/cleaner/segment_swap.h"
#include "storage/file_names.h"
#include "storage/file_util.h"

namespace strata::storage {
namespace bf = protocol::batch_format;

namespace {

struct Snapshot {
  std::vector<std::shared_ptr<Segment>> segments;  // sealed ones followed by the active one
  int64_t log_start = 0;
  int64_t log_end = 0;
  int64_t high_watermark = 0;
  int64_t bound = 0;
  std::vector<uint64_t> sizes;  // of each segment, read under state_mu_ (the active one grows)
};

// Sequential whole-batch reader over a sealed segment's .log.
class BatchCursor {
 public:
  explicit BatchCursor(const Segment& s) : file_(*s.log_file()), size_(s.size()) {}
  BatchCursor(const Segment& s, uint64_t size) : file_(*s.log_file()), size_(size) {}
  // Next batch or an empty span at the end.
  Result<std::span<const uint8_t>> next() {
    if (pos_ >= size_) return std::span<const uint8_t>();
    if (size_ - pos_ < bf::kHeaderSize)
      return Status(Errc::corruption, "torn batch in " + file_.path());
    uint8_t header[bf::kHeaderSize];
    auto n = file_.read(pos_, sizeof(header), header);
    if (!n.ok()) return n.status();
    const size_t size = protocol::peek_batch_size({header, sizeof(header)});
    if (*n != sizeof(header) || size < bf::kHeaderSize || size > size_ - pos_) {
      return Status(Errc::corruption, "bad batch header in " + file_.path());
    }
    buf_.resize(size);
    auto got = file_.read(pos_, size, buf_.data());
    if (!got.ok()) return got.status();
    if (*got != size) return Status(Errc::corruption, "short read in " + file_.path());
    pos_ += size;
    return std::span<const uint8_t>(buf_);
  }
  // Header only (producer scan); nullopt at the end.
  Result<std::optional<std::array<uint8_t, bf::kHeaderSize>>> next_header() {
    using Out = std::optional<std::array<uint8_t, bf::kHeaderSize>>;
    if (pos_ >= size_ || size_ - pos_ < bf::kHeaderSize) return Out();
    std::array<uint8_t, bf::kHeaderSize> h;
    auto n = file_.read(pos_, h.size(), h.data());
    if (!n.ok()) return n.status();
    const size_t size = protocol::peek_batch_size(h);
    if (*n != h.size() || size < bf::kHeaderSize) return Out();
    pos_ += size;
    return Out(h);
  }

 private:
  const RandomAccessFile& file_;
  const uint64_t size_;
  uint64_t pos_ = 0;
  std::vector<uint8_t> buf_;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using OffsetMap = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;

std::string_view as_view(std::span<const uint8_t> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

int64_t read_checkpoint(Env* env, const std::string& dir) {
  auto text = read_file_to_string(env, join_path(dir, kCleanerCheckpointFile));
  if (!text.ok()) return 0;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || v < 0) return 0;
  return v;
}

}  // namespace

Result<CleanableRange> LogCleaner::cleanable_range(PartitionLog& log, const CleanerPolicy& policy,
                                                   int64_t now_ms) {
  std::lock_guard<std::mutex> maintenance(log.maintenance_mu_);
  return range_locked(log, policy, now_ms);
}

Result<CleanableRange> LogCleaner::range_locked(PartitionLog& log, const CleanerPolicy& policy,
                                                int64_t now_ms) {
  std::vector<std::shared_ptr<Segment>> segs;
  int64_t start = 0, hw = 0;
  {
    std::shared_lock<std::shared_mutex> state(log.state_mu_);
    segs = log.segments_;
    start = log.log_start_offset();
    // Kafka cleans below the last stable offset only: an open transaction's records may still
    // commit or abort, and its later records of a key must not shadow committed ones meanwhile.
    hw = log.last_stable_offset();
  }
  CleanableRange r;
  const int64_t checkpoint = read_checkpoint(log.env_, log.dir_);
  int64_t limit = std::min({segs.back()->base_offset(), hw, log.retention_bound()});
  if (policy.min_compaction_lag_ms > 0) {
    for (size_t i = 0; i + 1 < segs.size(); ++i) {
      if (segs[i]->max_timestamp() > now_ms - policy.min_compaction_lag_ms) {
        limit = std::min(limit, segs[i]->base_offset());
        break;
      }
    }
  }
  r.first_uncleanable = start;
  r.first_dirty = std::max(checkpoint, start);
  for (size_t i = 0; i + 1 < segs.size(); ++i) {
    const int64_t end = segs[i + 1]->base_offset();
    if (end > limit) break;
    r.first_uncleanable = end;
    if (end <= start) continue;
    const auto bytes = static_cast<int64_t>(segs[i]->size());
    if (end <= checkpoint) {
      r.clean_bytes += bytes;
    } else {
      r.dirty_bytes += bytes;
      r.first_dirty = std::min(r.first_dirty, std::max(segs[i]->base_offset(), start));
    }
  }
  if (r.dirty_bytes == 0) r.first_dirty = r.first_uncleanable;
  return r;
}

Result<CleanOutcome> LogCleaner::clean(PartitionLog& log, const CleanerPolicy& policy,
                                       int64_t now_ms, bool force) {
  std::lock_guard<std::mutex> maintenance(log.maintenance_mu_);
  CleanOutcome out;
  LogConfig config;
  std::shared_ptr<const BatchSummarizer> summarizer;  // the .stats of cleaned segments
  {
    std::lock_guard<std::mutex> lock(log.append_mu_);
    if (log.deleted_ || log.closed_) return out;
    config = log.config_;
    summarizer = log.summarizer_;
  }
  auto range = range_locked(log, policy, now_ms);
  if (!range.ok()) return range.status();
  out.range = *range;
  std::optional<int64_t> horizon;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_horizon_.find(log.dir_);
    if (it != pending_horizon_.end()) horizon = it->second;
  }
  const bool horizon_due = horizon && *horizon <= now_ms;
  const bool ratio_due =
      range->dirty_bytes > 0 && range->dirty_ratio() >= policy.min_cleanable_ratio;
  if (!force && !ratio_due && !horizon_due) return out;
  if (range->clean_bytes + range->dirty_bytes == 0) return out;

  Snapshot snap;
  {
    std::shared_lock<std::shared_mutex> state(log.state_mu_);
    snap.segments = log.segments_;
    snap.log_start = log.log_start_offset();
    snap.log_end = log.log_end_offset();
    for (const auto& seg : snap.segments) snap.sizes.push_back(seg->size());
  }
  // The cleanable segments: sealed, ending at or below first_uncleanable, above the log start.
  std::vector<std::shared_ptr<Segment>> targets;
  std::vector<bool> dirty;
  for (size_t i = 0; i + 1 < snap.segments.size(); ++i) {
    const int64_t end = snap.segments[i + 1]->base_offset();
    if (end > range->first_uncleanable) break;
    if (end <= snap.log_start) continue;
    targets.push_back(snap.segments[i]);
    dirty.push_back(end > range->first_dirty);
  }

  // Records of aborted transactions are never "the latest" of their key (they never happened)
  // and are removed, as Kafka's cleaner does; markers stay (a read_committed consumer past them
  // needs nothing from them, but keeping them is always safe).
  const std::vector<AbortedTxn> aborted =
      targets.empty()
          ? std::vector<AbortedTxn>{}
          : log.aborted_transactions(targets.front()->base_offset(), range->first_uncleanable);
  // 1. Offset map over the dirty part.
  OffsetMap latest;
  protocol::RecordReader reader;
  protocol::Record rec;
  for (size_t t = 0; t < targets.size(); ++t) {
    if (!dirty[t]) continue;
    BatchCursor cursor(*targets[t]);
    for (;;) {
      auto batch = cursor.next();
      if (!batch.ok()) return batch.status();
      if (batch->empty()) break;
      account(batch->size());
      protocol::RecordBatchView view(*batch);
      if (view.is_control() || view.record_count() == 0 || in_aborted_transaction(aborted, view))
        continue;
      STRATA_RETURN_IF_ERROR(reader.reset(view));
      for (;;) {
        auto more = reader.next(rec);
        if (!more.ok()) return more.status();
        if (!*more) break;
        if (!rec.key) continue;
        const int64_t offset = view.base_offset() + rec.offset_delta;
        auto it = latest.find(as_view(*rec.key));
        if (it == latest.end()) {
          latest.emplace(std::string(as_view(*rec.key)), offset);
        } else if (offset > it->second) {
          it->second = offset;
        }
      }
    }
  }

  // 2. Last batch of each producer id in the whole log (Kafka keeps it, even emptied).
  std::unordered_map<int64_t, int64_t> producer_last;
  for (size_t i = 0; i < snap.segments.size(); ++i) {
    const Segment* s = snap.segments[i].get();
    if (s->base_offset() >= snap.log_end) break;
    BatchCursor cursor(*s, snap.sizes[i]);
    for (;;) {
      auto h = cursor.next_header();
      if (!h.ok()) return h.status();
      if (!*h) break;
      protocol::RecordBatchView view(std::span<const uint8_t>((*h)->data(), (*h)->size()));
      if (view.last_offset() >= snap.log_end) break;
      if (view.producer_id() >= 0) producer_last[view.producer_id()] = view.last_offset();
    }
  }

  // 3. Rewrite each cleanable segment.
  cleaner::BatchFilter filter;
  std::vector<uint8_t> rebuilt;
  std::optional<int64_t> next_horizon;
  const int64_t new_horizon = now_ms + policy.delete_retention_ms;
  for (const auto& seg : targets) {
    const int64_t base = seg->base_offset();
    out.bytes_before += static_cast<int64_t>(seg->size());
    auto writer =
        cleaner::CleanedSegmentWriter::create(log.env_, log.dir_, base, config, summarizer);
    if (!writer.ok()) return writer.status();
    bool changed = false;
    BatchCursor cursor(*seg);
    for (;;) {
      auto batch = cursor.next();
      if (!batch.ok()) return batch.status();
      if (batch->empty()) break;
      account(batch->size());
      protocol::RecordBatchView view(*batch);
      if (view.record_count() == 0 && !view.is_control()) {
        // An emptied batch kept for its producer: only while it is still the producer's last.
        auto pl = producer_last.find(view.producer_id());
        if (pl == producer_last.end() || pl->second != view.last_offset()) {
          changed = true;
          continue;
        }
      }
      if (view.is_control() || view.record_count() == 0) {
        STRATA_RETURN_IF_ERROR((*writer)->append(*batch));
        continue;
      }
      if (in_aborted_transaction(
              aborted, view)) {  // never the producer's last batch: its ABORT marker follows
        out.records_removed += view.record_count();
        changed = true;
        continue;
      }
      const bool has_horizon = view.has_delete_horizon();
      const bool horizon_passed = has_horizon && view.base_timestamp() <= now_ms;
      STRATA_RETURN_IF_ERROR(reader.reset(view));
      filter.begin(view);
      int32_t removed = 0;
      bool tombstone_kept = false;
      for (;;) {
        auto more = reader.next(rec);
        if (!more.ok()) return more.status();
        if (!*more) break;
        const int64_t offset = view.base_offset() + rec.offset_delta;
        bool keep = rec.key.has_value();  // keyless records are invalid on a compacted topic
        if (keep) {
          auto it = latest.find(as_view(*rec.key));
          if (it != latest.end() && it->second > offset) keep = false;
        }
        if (keep && !rec.value) {
          if (horizon_passed) {
            keep = false;
            ++out.tombstones_removed;
          } else {
            tombstone_kept = true;
          }
        }
        if (keep) {
          filter.keep(rec, view.base_timestamp() + rec.timestamp_delta);
        } else {
          ++removed;
        }
      }
      out.records_removed += removed;
      const bool set_horizon = tombstone_kept && !has_horizon;
      if (tombstone_kept) {
        const int64_t h = set_horizon ? new_horizon : view.base_timestamp();
        next_horizon = next_horizon ? std::min(*next_horizon, h) : h;
      }
      if (removed == 0 && !set_horizon) {
        STRATA_RETURN_IF_ERROR((*writer)->append(*batch));
        continue;
      }
      changed = true;
      if (filter.kept() == 0) {
        auto pl = producer_last.find(view.producer_id());
        if (view.producer_id() < 0 || pl == producer_last.end() ||
            pl->second != view.last_offset()) {
          continue;  // dropped
        }
        ++out.empty_batches_kept;
      }
      rebuilt.clear();
      STRATA_RETURN_IF_ERROR(
          filter.finish(set_horizon ? std::optional<int64_t>(new_horizon) : std::nullopt, rebuilt));
      STRATA_RETURN_IF_ERROR((*writer)->append(rebuilt));
      account(rebuilt.size());
    }
    if (!changed) {
      STRATA_RETURN_IF_ERROR((*writer)->abandon());
      out.bytes_after += static_cast<int64_t>(seg->size());
      continue;
    }
    out.bytes_after += static_cast<int64_t>((*writer)->size());
    STRATA_RETURN_IF_ERROR((*writer)->finish());
    {
      std::lock_guard<std::mutex> lock(log.append_mu_);
      if (log.deleted_ || log.closed_) {
        STRATA_RETURN_IF_ERROR((*writer)->abandon());
        return out;
      }
    }
    STRATA_RETURN_IF_ERROR(cleaner::swap_in_cleaned_segment(log.env_, log.dir_, base));
    auto fresh = Segment::open(log.env_, log.dir_, base, config, Segment::OpenMode::trust, now_ms);
    if (!fresh.ok()) return fresh.status();
    STRATA_RETURN_IF_ERROR((*fresh)->seal(/*sync=*/false));
    {
      std::unique_lock<std::shared_mutex> state(log.state_mu_);
      for (auto& s : log.segments_) {
        if (s->base_offset() == base && s.get() != log.segments_.back().get()) {
          s = *fresh;
          break;
        }
      }
    }
    ++out.segments_rewritten;
  }

  // 4. Everything up to first_uncleanable is clean now.
  STRATA_RETURN_IF_ERROR(write_file_atomically(log.env_,
                                               join_path(log.dir_, kCleanerCheckpointFile),
                                               std::to_string(range->first_uncleanable) + "\n"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (next_horizon) {
      pending_horizon_[log.dir_] = *next_horizon;
    } else {
      pending_horizon_.erase(log.dir_);
    }
  }
  out.next_delete_horizon = next_horizon;
  out.cleaned = true;
  return out;
}

}  // namespace strata::storage
