// PartitionLog's replication calls: follower appends at the leader's offsets, truncation to a
// divergence point, reset to the leader's log start, leadership and the high watermark set from
// outside (see partition_log.h and the "Replication" section of docs/storage.md).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocol/record/batch_format.h"
#include "protocol/record/record_batch.h"
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"

namespace strata::storage {
namespace {

namespace bf = protocol::batch_format;

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status PartitionLog::writable_locked() const {
  if (deleted_) return Status(Errc::not_found, "log " + dir_ + " was deleted");
  if (closed_) return Status(Errc::shutting_down, "log " + dir_ + " is closed");
  if (failed_) return Status(Errc::io_error, "log " + dir_ + " is offline after an I/O error");
  return Status::Ok();
}

int32_t PartitionLog::latest_epoch() const {
  std::shared_lock<std::shared_mutex> state(state_mu_);
  return epochs_.latest_epoch();
}

Result<int64_t> PartitionLog::append_as_follower(std::span<const uint8_t> batches, int64_t now_ms) {
  int64_t new_leo = -1;
  bool hw_advanced = false;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    STRATA_RETURN_IF_ERROR(writable_locked());
    // Validate everything before writing anything: a corrupt fetch response leaves no trace.
    std::vector<std::span<const uint8_t>> parts;
    int64_t expected = log_end_offset();
    for (std::span<const uint8_t> rest = batches; !rest.empty();) {
      if (rest.size() < bf::kHeaderSize) {
        return Status(Errc::corruption, "truncated batch header in a follower append");
      }
      const size_t n = protocol::peek_batch_size(rest);
      if (n < bf::kHeaderSize || n > rest.size()) {
        return Status(Errc::corruption, "bad batch length in a follower append");
      }
      protocol::RecordBatchView view(rest.first(n));
      const protocol::BatchCheck check = view.validate();
      if (check != protocol::BatchCheck::ok) {
        return Status(Errc::corruption, "invalid batch in a follower append: " +
                                            std::string(protocol::batch_check_name(check)));
      }
      if (view.last_offset_delta() < 0) {
        return Status(Errc::corruption, "negative lastOffsetDelta in a follower append");
      }
      const int64_t base = view.base_offset();
      // The first batch continues the log exactly; later ones may skip offsets the leader's
      // cleaner removed, never go back.
      if (parts.empty() ? base != expected : base < expected) {
        return Status(Errc::invalid_argument, "follower append at offset " + std::to_string(base) +
                                                  ", expected " + (parts.empty() ? "" : ">= ") +
                                                  std::to_string(expected));
      }
      expected = view.last_offset() + 1;
      parts.push_back(rest.first(n));
      rest = rest.subspan(n);
    }
    if (parts.empty()) return log_end_offset();
    leading_ = false;
    for (const auto& part : parts) {
      protocol::RecordBatchView view(part);
      const int32_t epoch = view.partition_leader_epoch();
      const int64_t base = view.base_offset();
      if (epoch > epochs_.latest_epoch()) {
        // Kafka's follower assigns the epoch before appending: a crash between leaves an epoch
        // starting at the log end with no batch yet, which is still the truth about the leader.
        LeaderEpochCache next = epochs_;
        STRATA_RETURN_IF_ERROR(next.assign(epoch, base));
        std::unique_lock<std::shared_mutex> state(state_mu_);
        epochs_ = std::move(next);
      }
      auto written = write_batch_locked(part, base, view.last_offset(), view.max_timestamp(), epoch,
                                        view.record_count(), now_ms);
      if (!written.ok()) {
        failure = written.status();  // the batches before it stay; refetch from the log end
        break;
      }
      new_leo = *written;
      // As Kafka's replication origin: no duplicate or sequence checks, only the bookkeeping, so
      // this replica rejects retries of what it replicated once it leads.
      Status tracked = track_batch_locked(part, base);  // producer and transaction state
      if (!tracked.ok()) {
        failure = tracked;
        break;
      }
    }
    // One node (a log opened without `replicated`): the HW follows the durable end as usual.
    if (!replicated_) hw_advanced = publish_high_watermark(durable_end_offset());
  }
  if (new_leo >= 0 && listeners_) {
    if (listeners_->log_end) listeners_->log_end(*this, new_leo);
    if (hw_advanced && listeners_->high_watermark) {
      listeners_->high_watermark(*this, high_watermark());
    }
  }
  if (!failure.ok()) return failure;
  return new_leo;
}

Status PartitionLog::truncate_to(int64_t offset) {
  std::lock_guard<std::mutex> maintenance(maintenance_mu_);
  std::lock_guard<std::mutex> lock(append_mu_);
  STRATA_RETURN_IF_ERROR(writable_locked());
  if (replicated_) leading_ = false;
  if (offset >= log_end_offset()) {
    // Nothing to cut, but an epoch with no batch yet (a leadership that ended before its first
    // append) is forgotten: the follower protocol truncates to its log end exactly when the new
    // leader's history diverges there, and batches of an older epoch may follow.
    LeaderEpochCache next = epochs_;
    STRATA_RETURN_IF_ERROR(next.truncate_from_end(log_end_offset()));
    std::unique_lock<std::shared_mutex> state(state_mu_);
    epochs_ = std::move(next);
    return Status::Ok();
  }
  if (offset < log_start_offset()) {
    return Status(Errc::invalid_argument, "truncation to " + std::to_string(offset) +
                                              " below the log start " +
                                              std::to_string(log_start_offset()));
  }
  // Where the cut goes: the start of the first batch whose last offset is >= offset.
  size_t si = 0;
  uint64_t cut_pos = 0;
  int64_t new_end = 0;
  {
    std::shared_lock<std::shared_mutex> state(state_mu_);
    si = segment_index_for(offset);
    const Segment& seg = *segments_[si];
    auto found = seg.find_batch(offset);
    if (!found.ok()) return found.status();
    if (*found) {
      cut_pos = (*found)->position;
      new_end = cut_pos == 0 ? seg.base_offset() : (*found)->base_offset;
      if (cut_pos > 0) {
        // The batch before the cut ends the log (an offset gap before the cut stays outside).
        uint64_t pos = 0;
        int64_t end = seg.base_offset();
        while (pos < cut_pos) {
          auto b = seg.batch_at(pos);
          if (!b.ok()) return b.status();
          if (!*b) break;
          end = (*b)->last_offset + 1;
          pos += (*b)->size;
        }
        new_end = end;
      }
    } else {
      cut_pos = seg.size();
      new_end = seg.next_offset();
    }
  }
  if (new_end < log_start_offset()) {
    return Status(Errc::invalid_argument, "truncation to " + std::to_string(offset) +
                                              " would end the log at " + std::to_string(new_end) +
                                              ", below the log start " +
                                              std::to_string(log_start_offset()));
  }
  // Publish the shorter log first, so no reader sees a byte that is about to go.
  std::vector<std::shared_ptr<Segment>> doomed;
  {
    std::unique_lock<std::shared_mutex> state(state_mu_);
    doomed.assign(segments_.begin() + static_cast<ptrdiff_t>(si) + 1, segments_.end());
    segments_.resize(si + 1);
    log_end_offset_.store(new_end, std::memory_order_release);
    durable_end_offset_.store(std::min(durable_end_offset(), new_end), std::memory_order_release);
    high_watermark_.store(std::min(high_watermark(), new_end), std::memory_order_release);
  }
  // From here a failure leaves the files between the old log and the new one: offline until the
  // next open, which recovers a prefix of the old log (later segments go first).
  failed_ = true;
  for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
    STRATA_RETURN_IF_ERROR((*it)->remove_files());
  }
  // The removals must be durable before the cut below: a power loss that kept the cut but undid
  // an unlink would bring a later segment back after a shortened one (a hole in the log).
  if (!doomed.empty()) STRATA_RETURN_IF_ERROR(env_->sync_dir(dir_));
  const int64_t base = segments_[si]->base_offset();
  if (cut_pos < segments_[si]->size()) {
    // Cut the .log at the batch boundary and rebuild both indexes from what is left, as
    // recovery does (a divergence repair is rare; this reads the kept part of the segment).
    if (!segments_[si]->sealed()) {
      {
        std::unique_lock<std::shared_mutex> state(state_mu_);
        STRATA_RETURN_IF_ERROR(segments_[si]->finalize_time_index());
      }
      STRATA_RETURN_IF_ERROR(segments_[si]->seal(/*sync=*/false));
    }
    STRATA_RETURN_IF_ERROR(env_->truncate_file(segment_log_path(dir_, base), cut_pos));
    auto seg =
        Segment::open(env_, dir_, base, config_, Segment::OpenMode::recover, wall_clock_ms());
    if (!seg.ok()) return seg.status();
    if ((*seg)->next_offset() != new_end) {
      return Status(Errc::corruption, "segment " + std::to_string(base) + " ends at " +
                                          std::to_string((*seg)->next_offset()) +
                                          " after truncation to " + std::to_string(new_end));
    }
    STRATA_RETURN_IF_ERROR((*seg)->sync_log());
    STRATA_RETURN_IF_ERROR((*seg)->sync_indexes());
    std::unique_lock<std::shared_mutex> state(state_mu_);
    segments_[si] = std::move(*seg);
  } else {
    STRATA_RETURN_IF_ERROR(segments_[si]->sync_log());  // no-op when sealed (durable already)
  }
  STRATA_RETURN_IF_ERROR(env_->sync_dir(dir_));
  {
    LeaderEpochCache next = epochs_;
    STRATA_RETURN_IF_ERROR(next.truncate_from_end(new_end));
    std::unique_lock<std::shared_mutex> state(state_mu_);
    epochs_ = std::move(next);
  }
  int64_t replayed = 0;
  auto snap = load_producers_locked(new_end, &replayed);  // deletes snapshots above new_end
  if (!snap.ok()) return snap.status();
  recovery_point_ = new_end;
  unflushed_messages_ = 0;
  STRATA_RETURN_IF_ERROR(write_recovery_point(new_end));
  const std::string cleaner = join_path(dir_, kCleanerCheckpointFile);
  if (env_->file_exists(cleaner)) {
    auto text = read_file_to_string(env_, cleaner);
    if (text.ok() && std::atoll(text->c_str()) > new_end) {
      STRATA_RETURN_IF_ERROR(write_file_atomically(env_, cleaner, std::to_string(new_end) + "\n"));
    }
  }
  failed_ = false;
  return Status::Ok();
}

Status PartitionLog::reset_to(int64_t offset) {
  int64_t old_hw = 0;
  {
    std::lock_guard<std::mutex> maintenance(maintenance_mu_);
    std::lock_guard<std::mutex> lock(append_mu_);
    STRATA_RETURN_IF_ERROR(writable_locked());
    if (offset < 0) return Status(Errc::invalid_argument, "reset to a negative offset");
    if (replicated_) leading_ = false;
    old_hw = high_watermark();
    std::vector<std::shared_ptr<Segment>> doomed;
    {
      // Nothing is readable from here on: [offset, offset) is empty.
      std::unique_lock<std::shared_mutex> state(state_mu_);
      doomed = segments_;
      log_start_offset_.store(offset, std::memory_order_release);
      log_end_offset_.store(offset, std::memory_order_release);
      durable_end_offset_.store(offset, std::memory_order_release);
      high_watermark_.store(offset, std::memory_order_release);
    }
    failed_ = true;  // until the new layout is complete (the next open recovers a prefix)
    // Later segments first, so a crash leaves a prefix of the old log; then the snapshots, so no
    // old producer state is loaded over the new segment; then the new segment at `offset`.
    for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
      STRATA_RETURN_IF_ERROR((*it)->remove_files());
    }
    auto snaps = list_producer_snapshots(env_, dir_);
    if (!snaps.ok()) return snaps.status();
    for (int64_t s : *snaps) {
      Status st = env_->remove_file(producer_snapshot_path(dir_, s));
      if (!st.ok() && st.code() != Errc::not_found) return st;
    }
    producers_.clear();
    publish_txn_state_locked();
    {
      std::lock_guard<std::mutex> txn(txn_mu_);
      aborted_.clear();
    }
    {
      LeaderEpochCache next = epochs_;
      STRATA_RETURN_IF_ERROR(next.truncate_from_end(0));
      std::unique_lock<std::shared_mutex> state(state_mu_);
      epochs_ = std::move(next);
    }
    auto seg = Segment::create(env_, dir_, offset, config_);
    if (!seg.ok()) return seg.status();
    STRATA_RETURN_IF_ERROR(env_->sync_dir(dir_));
    {
      std::unique_lock<std::shared_mutex> state(state_mu_);
      segments_.assign(1, std::move(*seg));
    }
    STRATA_RETURN_IF_ERROR(write_log_start_offset(offset));
    const std::string cleaner = join_path(dir_, kCleanerCheckpointFile);
    if (env_->file_exists(cleaner)) {
      STRATA_RETURN_IF_ERROR(write_file_atomically(env_, cleaner, std::to_string(offset) + "\n"));
    }
    recovery_point_ = offset;
    unflushed_messages_ = 0;
    STRATA_RETURN_IF_ERROR(write_recovery_point(offset));
    failed_ = false;
  }
  if (listeners_ && listeners_->log_end) listeners_->log_end(*this, offset);
  if (offset > old_hw && listeners_ && listeners_->high_watermark) {
    listeners_->high_watermark(*this, offset);
  }
  return Status::Ok();
}

Status PartitionLog::become_leader(int32_t epoch) {
  std::lock_guard<std::mutex> lock(append_mu_);
  STRATA_RETURN_IF_ERROR(writable_locked());
  const int32_t latest = epochs_.latest_epoch();
  if (epoch < 0 || epoch < latest) {
    return Status(Errc::invalid_argument, "leader epoch " + std::to_string(epoch) +
                                              " is below the latest known " +
                                              std::to_string(latest));
  }
  if (epoch > latest) {
    LeaderEpochCache next = epochs_;
    STRATA_RETURN_IF_ERROR(next.assign(epoch, log_end_offset()));
    std::unique_lock<std::shared_mutex> state(state_mu_);
    epochs_ = std::move(next);
  }
  leader_epoch_.store(epoch, std::memory_order_release);
  leading_ = true;
  return Status::Ok();
}

int64_t PartitionLog::advance_high_watermark(int64_t hw) {
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    if (!replicated_) return high_watermark();
    hw_known_.store(true, std::memory_order_release);
    const int64_t target = std::min(hw, durable_end_offset());
    if (target <= high_watermark()) return high_watermark();
    high_watermark_.store(target, std::memory_order_release);
    now = target;
  }
  if (listeners_ && listeners_->high_watermark) listeners_->high_watermark(*this, now);
  return now;
}

}  // namespace strata::storage
