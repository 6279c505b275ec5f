// PartitionLog append, read, queries and flush policy (see partition_log.h; open() lives in
// partition_log_open.cc).
#include "storage/partition_log.h"

#include <algorithm>
#include <thread>

#include "protocol/record/batch_format.h"
#include "protocol/record/record_batch.h"
#include "storage/file_names.h"
#include "storage/file_util.h"

namespace strata::storage {

PartitionLog::~PartitionLog() = default;

Result<PartitionLog::AppendInfo> PartitionLog::append(std::span<uint8_t> batch, int64_t now_ms) {
  int64_t new_leo = 0;
  bool hw_advanced = false;
  AppendInfo out{};
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    if (deleted_) return Status(Errc::not_found, "log " + dir_ + " was deleted");
    if (closed_) return Status(Errc::shutting_down, "log " + dir_ + " is closed");
    if (failed_) return Status(Errc::io_error, "log " + dir_ + " is offline after an I/O error");
    if (replicated_ && !leading_) {
      return Status(Errc::invalid_argument, "log " + dir_ + " is not the leader's replica");
    }
    if (batch.size() < protocol::batch_format::kHeaderSize ||
        protocol::peek_batch_size(batch) != batch.size()) {
      return Status(Errc::invalid_argument, "append needs exactly one whole v2 batch");
    }
    protocol::RecordBatchView view(batch);
    if (view.last_offset_delta() < 0) {
      return Status(Errc::invalid_argument, "negative lastOffsetDelta");
    }
    // Idempotent producers: the dedupe/sequence decision and the append share this lock.
    const ProducerBatch producer{view.producer_id(), view.producer_epoch(), view.base_sequence(),
                                 view.last_offset_delta(), view.max_timestamp()};
    if (producer.has_producer() && !view.is_control()) {
      ProducerCheckResult check = producers_.check(producer);
      if (check.kind != ProducerCheck::ok) {
        out.producer_check = check.kind;
        out.leader_epoch = leader_epoch();
        out.base_offset = check.dup_first_offset;
        out.last_offset = check.dup_last_offset;
        out.duplicate_timestamp = check.dup_timestamp;
        out.producer_message = std::move(check.message);
        return out;
      }
    }
    const int64_t base = log_end_offset();
    const int32_t epoch = leader_epoch();
    protocol::set_base_offset(batch, base);
    protocol::set_partition_leader_epoch(batch, epoch);
    const int64_t last = base + view.last_offset_delta();
    auto written = write_batch_locked(batch, base, last, view.max_timestamp(), epoch,
                                      view.record_count(), now_ms);
    if (!written.ok()) return written.status();
    new_leo = *written;
    // Replicated mode: the high watermark comes from outside (advance_high_watermark).
    hw_advanced = !replicated_ && publish_high_watermark(new_leo);
    // Producer and transaction state (a control batch ends its producer's transaction).
    STRATA_RETURN_IF_ERROR(track_batch_locked(batch, base));
    out.base_offset = base;
    out.last_offset = last;
    out.leader_epoch = epoch;
  }
  if (listeners_) {
    if (listeners_->log_end) listeners_->log_end(*this, new_leo);
    if (hw_advanced && listeners_->high_watermark)
      listeners_->high_watermark(*this, high_watermark());
  }
  return out;
}

Result<int64_t> PartitionLog::write_batch_locked(std::span<const uint8_t> batch, int64_t base,
                                                 int64_t last, int64_t max_timestamp, int32_t epoch,
                                                 int32_t record_count, int64_t now_ms) {
  const auto size = static_cast<uint32_t>(batch.size());
  const int64_t messages = std::max<int32_t>(1, record_count);
  const bool flush_now = unflushed_messages_ + messages >= config_.flush_interval_messages;

  if (segments_.back()->sealed() || segments_.back()->should_roll(config_, size, last, now_ms)) {
    // A sealed active segment is a roll that failed half-way: it is finished here.
    STRATA_RETURN_IF_ERROR(roll(base));
  }
  Segment& active = *segments_.back();
  const uint64_t committed_size = active.size();
  Result<uint64_t> pos = Status(Errc::unavailable, "not written");
  for (int attempt = 1;; ++attempt) {
    pos = active.write(batch);  // a failed write is cut back out by the segment
    if (pos.ok() || !transient_retry_due(pos.status(), attempt)) break;
  }
  if (!pos.ok()) {
    // Out of space or descriptors: nothing is left of the batch, the log stays writable and the
    // next append tries again. Anything else leaves the file in an unknown state.
    if (!retriable_io(pos.status())) failed_ = true;
    return pos.status();
  }
  if (flush_now) {
    // fsync before the batch is committed: readers only see bytes below the committed size, so a
    // consumer can never read (or commit an offset of) a batch whose ack would be a lie.
    Status st = active.sync_log();
    if (!st.ok()) {
      // The producer gets this error, so the batch must not stay: cut it back out, so the next
      // open does not find it either (unless the truncation fails too). After a failed fsync the
      // page cache state of the earlier bytes is unknown as well, so the log goes offline until
      // the next open recovers it.
      (void)active.truncate_uncommitted(committed_size);
      failed_ = true;
      return st;
    }
  }
  BatchInfo info{*pos, size, base, last, max_timestamp, epoch, record_count};
  const int64_t new_leo = last + 1;
  {
    std::unique_lock<std::shared_mutex> state(state_mu_);
    Status st = active.commit(info, now_ms);  // rolled back by the segment when it fails
    if (!st.ok()) {
      // An index write ran out of space or descriptors: cut the unpublished batch out of the
      // .log as well (durably if it was fsynced above, so a restart cannot bring back a batch
      // the producer was told failed) and stay writable.
      Status undo = active.truncate_uncommitted(committed_size);
      if (undo.ok() && flush_now) undo = active.sync_log();
      if (!undo.ok() || !retriable_io(st)) failed_ = true;
      return st;
    }
    log_end_offset_.store(new_leo, std::memory_order_release);
  }
  if (summarizer_) summarize_locked(segments_.back(), info, batch);
  if (flush_now) {
    recovery_point_ = new_leo;
    unflushed_messages_ = 0;
  } else {
    unflushed_messages_ += messages;
  }
  // Either fsynced above or, by the flush policy, acknowledged from the page cache.
  durable_end_offset_.store(new_leo, std::memory_order_release);
  return new_leo;
}

bool PartitionLog::publish_high_watermark(int64_t durable_end) {
  if (durable_end <= high_watermark()) return false;
  high_watermark_.store(durable_end, std::memory_order_release);
  return true;
}

bool PartitionLog::transient_retry_due(const Status& st, int attempt) {
  if (st.code() != Errc::unavailable || attempt >= kTransientAttempts) return false;
  std::this_thread::sleep_for(kTransientBackoff * (1 << (attempt - 1)));
  return true;
}

Status PartitionLog::roll(int64_t new_base_offset) {
  Status st;
  for (int attempt = 1;; ++attempt) {
    st = roll_step(new_base_offset);
    if (st.ok() || !transient_retry_due(st, attempt)) break;
  }
  // Out of descriptors or space: the log stays writable, and the next append (or retention pass)
  // resumes the roll where it stopped. Anything else (a failed fsync) takes it offline.
  if (!st.ok() && !retriable_io(st)) failed_ = true;
  return st;
}

Status PartitionLog::roll_step(int64_t new_base_offset) {
  // Every step is idempotent and the new segment is published last, so a roll that failed at any
  // step can simply be run again. Seal (fsync + close) the old active segment first: every
  // segment but the active one is durable.
  if (!segments_.back()->sealed()) {
    {
      std::unique_lock<std::shared_mutex> state(state_mu_);
      STRATA_RETURN_IF_ERROR(segments_.back()->finalize_time_index());
    }
    STRATA_RETURN_IF_ERROR(segments_.back()->seal());
    seal_summaries_locked();
  }
  // Producer state as of every batch below the new segment (recovery replays from here), and the
  // recovery point: both hold once the old segment is sealed, before the new one exists.
  STRATA_RETURN_IF_ERROR(write_producer_snapshot(env_, dir_, producers_, new_base_offset));
  recovery_point_ = std::max(recovery_point_, new_base_offset);
  STRATA_RETURN_IF_ERROR(write_recovery_point(new_base_offset));
  auto seg = Segment::create(env_, dir_, new_base_offset, config_);
  if (!seg.ok()) return seg.status();
  STRATA_RETURN_IF_ERROR(env_->sync_dir(dir_));
  std::unique_lock<std::shared_mutex> state(state_mu_);
  segments_.push_back(std::move(*seg));
  return Status::Ok();
}

Status PartitionLog::write_back_ahead(uint64_t min_bytes) {
  std::shared_ptr<RandomAccessFile> file;
  int64_t base = 0;
  uint64_t size = 0;
  {
    // Segment sizes change under the state lock; the reader's descriptor lives as long as `file`
    // (a roll or a deletion meanwhile only makes the write-back moot).
    std::shared_lock<std::shared_mutex> state(state_mu_);
    if (segments_.empty()) return Status::Ok();
    const Segment& active = *segments_.back();
    base = active.base_offset();
    size = active.size();
    uint64_t done = written_back_base_.load(std::memory_order_relaxed) == base
                        ? written_back_size_.load(std::memory_order_relaxed)
                        : 0;
    if (size < done) done = 0;  // truncated (a follower's truncate_to, reset_to) since
    if (size < done + min_bytes) return Status::Ok();
    file = active.log_file();
  }
  // Counted as done even when it fails (the caller logs it): tried again a step later, not on
  // every pass.
  written_back_base_.store(base, std::memory_order_relaxed);
  written_back_size_.store(size, std::memory_order_relaxed);
  return file->write_back();
}

Status PartitionLog::flush_locked() {
  if (unflushed_messages_ == 0) return Status::Ok();
  Status st = segments_.back()->sync_log();
  if (!st.ok()) {
    // After a failed fsync the page cache state is unknown (the data may never reach the disk):
    // take the log offline rather than acknowledge anything more; restart recovers it.
    failed_ = true;
    return st;
  }
  recovery_point_ = log_end_offset();
  unflushed_messages_ = 0;
  return Status::Ok();
}

void PartitionLog::mark_deleted() {
  std::lock_guard<std::mutex> lock(append_mu_);
  deleted_ = true;
  closed_ = true;
}

Status PartitionLog::flush() {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_) return Status::Ok();
  return flush_locked();
}

Status PartitionLog::flush_if_due(int64_t now_ms) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_ || unflushed_messages_ == 0) return Status::Ok();
  if (now_ms - last_flush_ms_ < config_.flush_interval_ms) return Status::Ok();
  last_flush_ms_ = now_ms;
  return flush_locked();
}

Status PartitionLog::close() {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (closed_) return Status::Ok();
  closed_ = true;
  if (failed_) return Status(Errc::io_error, "log " + dir_ + " is offline; not marked clean");
  {
    std::unique_lock<std::shared_mutex> state(state_mu_);
    STRATA_RETURN_IF_ERROR(segments_.back()->finalize_time_index());
  }
  STRATA_RETURN_IF_ERROR(segments_.back()->seal());
  seal_summaries_locked();
  recovery_point_ = log_end_offset();
  unflushed_messages_ = 0;
  STRATA_RETURN_IF_ERROR(write_recovery_point(recovery_point_));
  STRATA_RETURN_IF_ERROR(write_producer_snapshot(env_, dir_, producers_, recovery_point_));
  return write_file_atomically(env_, join_path(dir_, kCleanShutdownFile), "");
}

int64_t PartitionLog::recovery_point() const {
  std::lock_guard<std::mutex> lock(append_mu_);
  return recovery_point_;
}

size_t PartitionLog::segment_index_for(int64_t offset) const {
  auto it = std::upper_bound(
      segments_.begin(), segments_.end(), offset,
      [](int64_t o, const std::shared_ptr<Segment>& s) { return o < s->base_offset(); });
  return it == segments_.begin() ? 0 : static_cast<size_t>(it - segments_.begin()) - 1;
}

Result<PartitionLog::ReadResult> PartitionLog::read(int64_t offset, uint32_t max_bytes,
                                                    bool min_one, int64_t upper_bound) const {
  std::shared_lock<std::shared_mutex> state(state_mu_);
  const int64_t leo = log_end_offset();
  const int64_t start = log_start_offset();
  if (offset < start || offset > leo) {
    return Status(Errc::out_of_range, "offset " + std::to_string(offset) + " outside [" +
                                          std::to_string(start) + ", " + std::to_string(leo) + "]");
  }
  ReadResult out;
  const int64_t bound = std::min(upper_bound, leo);
  if (offset >= bound) return out;

  size_t si = segment_index_for(offset);
  auto found = segments_[si]->find_batch(offset);
  if (!found.ok()) return found.status();
  std::optional<BatchInfo> b = *found;
  uint64_t total = 0;
  while (true) {
    while (!b && si + 1 < segments_.size()) {  // continue in the next segment
      ++si;
      auto next = segments_[si]->batch_at(0);
      if (!next.ok()) return next.status();
      b = *next;
    }
    if (!b || b->last_offset >= bound) break;
    if (total + b->size > max_bytes && !(min_one && out.ranges.empty())) break;
    const auto& file = segments_[si]->log_file();
    if (!out.ranges.empty() && out.ranges.back().file == file &&
        out.ranges.back().position + out.ranges.back().size == b->position) {
      out.ranges.back().size += b->size;
    } else {
      out.ranges.push_back(FileRange{file, b->position, b->size});
    }
    total += b->size;
    auto next = segments_[si]->batch_at(b->position + b->size);
    if (!next.ok()) return next.status();
    b = *next;
  }
  out.total_bytes = static_cast<uint32_t>(total);
  return out;
}

int64_t PartitionLog::size_bytes() const {
  std::shared_lock<std::shared_mutex> state(state_mu_);
  int64_t total = 0;
  for (const auto& s : segments_) total += static_cast<int64_t>(s->size());
  return total;
}

std::vector<int64_t> PartitionLog::segment_base_offsets() const {
  std::shared_lock<std::shared_mutex> state(state_mu_);
  std::vector<int64_t> out;
  for (const auto& s : segments_) out.push_back(s->base_offset());
  return out;
}

Result<std::optional<TimestampAndOffset>> PartitionLog::offset_for_timestamp(int64_t ts) const {
  using Out = std::optional<TimestampAndOffset>;
  std::shared_lock<std::shared_mutex> state(state_mu_);
  const int64_t start = log_start_offset();
  const int64_t hw = high_watermark();
  for (const auto& s : segments_) {
    if (s->next_offset() <= start) continue;
    auto hit = s->find_offset_for_timestamp(ts, start);
    if (!hit.ok()) return hit.status();
    if (*hit) return (*hit)->offset < hw ? *hit : Out();
  }
  return Out();
}

Result<std::optional<TimestampAndOffset>> PartitionLog::max_timestamp() const {
  std::shared_lock<std::shared_mutex> state(state_mu_);
  const Segment* best = nullptr;
  for (const auto& s : segments_) {
    if (!s->empty() && s->max_timestamp() >= 0 &&
        (best == nullptr || s->max_timestamp() > best->max_timestamp())) {
      best = s.get();
    }
  }
  if (best == nullptr) return std::optional<TimestampAndOffset>();
  return best->max_timestamp_record();
}

std::optional<int32_t> PartitionLog::epoch_for_offset(int64_t offset) const {
  std::shared_lock<std::shared_mutex> state(state_mu_);
  return epochs_.epoch_for_offset(offset);
}

std::pair<int32_t, int64_t> PartitionLog::end_offset_for_epoch(int32_t epoch) const {
  std::shared_lock<std::shared_mutex> state(state_mu_);
  return epochs_.end_offset_for_epoch(epoch, log_end_offset());
}

}  // namespace strata::storage
