// PartitionLog::open: segment discovery, recovery of an unclean shutdown, leader-epoch bump
// (see partition_log.h).
#include <algorithm>
#include <charconv>
#include <limits>

#include "storage/cleaner/segment_swap.h"
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"

namespace strata::storage {
namespace {

// The persisted recovery point; nullopt when missing or unreadable (then everything is validated).
std::optional<int64_t> read_recovery_point(Env* env, const std::string& dir) {
  auto text = read_file_to_string(env, join_path(dir, kRecoveryPointFile));
  if (!text.ok()) return std::nullopt;
  int64_t v = -1;
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || v < 0 || p == text->data() || *p != '\n') return std::nullopt;
  return v;
}

// An "<offset>\n" file (log-start-offset, cleaner-offset-checkpoint); nullopt when missing or
// unreadable.
std::optional<int64_t> read_offset_file(Env* env, const std::string& dir, std::string_view name) {
  auto text = read_file_to_string(env, join_path(dir, name));
  if (!text.ok() || text->empty()) return std::nullopt;
  int64_t v = -1;
  auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

Result<std::unique_ptr<PartitionLog>> PartitionLog::open(Env* env, std::string dir,
                                                         LogConfig config, int64_t now_ms) {
  STRATA_RETURN_IF_ERROR(env->create_dir(dir));
  std::unique_ptr<PartitionLog> log(new PartitionLog(env, std::move(dir), config));
  STRATA_RETURN_IF_ERROR(log->load_segments(now_ms));
  STRATA_RETURN_IF_ERROR(log->rebuild_producer_state());  // partition_log_producers.cc
  log->last_flush_ms_ = now_ms;

  auto epochs = LeaderEpochCache::load(env, join_path(log->dir_, kLeaderEpochCheckpoint));
  if (!epochs.ok()) return epochs.status();
  log->epochs_ = std::move(*epochs);
  const int64_t leo = log->log_end_offset();
  if (log->replicated_) {
    // As Kafka: entries starting at or past the log end go (left by a truncation a crash
    // interrupted, or by become_leader: leadership does not survive a restart), so the latest
    // epoch is the last batch's. The cluster names the epochs; a local bump could collide with a
    // real one. Nothing is readable until the leader (or the fetch response) sets the HW.
    STRATA_RETURN_IF_ERROR(log->epochs_.truncate_from_end(leo));
    log->leader_epoch_ = log->epochs_.latest_epoch();
    log->high_watermark_.store(log->log_start_offset());
    return log;
  }
  STRATA_RETURN_IF_ERROR(log->epochs_.truncate_from_end(leo + 1));
  // One node: the leader epoch is one more than any recorded, starting at the current log end.
  log->leader_epoch_ = log->epochs_.latest_epoch() + 1;
  STRATA_RETURN_IF_ERROR(log->epochs_.assign(log->leader_epoch_, leo));
  return log;
}

Status PartitionLog::load_segments(int64_t now_ms) {
  // Finish or discard a cleaner swap interrupted by a crash (storage/cleaner/).
  STRATA_RETURN_IF_ERROR(cleaner::recover_segment_swaps(env_, dir_));
  auto names = env_->list_dir(dir_);
  if (!names.ok()) return names.status();
  std::vector<int64_t> bases;
  for (const auto& n : *names) {
    if (auto base = parse_segment_log_name(n)) bases.push_back(*base);
  }
  std::sort(bases.begin(), bases.end());

  const std::string clean_marker = join_path(dir_, kCleanShutdownFile);
  const bool clean = env_->file_exists(clean_marker);
  const std::optional<int64_t> rp = clean ? std::nullopt : read_recovery_point(env_, dir_);

  for (size_t i = 0; i < bases.size(); ++i) {
    const bool last = i + 1 == bases.size();
    const int64_t next_base = last ? std::numeric_limits<int64_t>::max() : bases[i + 1];
    const bool trusted = clean || (rp.has_value() && next_base <= *rp);
    auto seg =
        Segment::open(env_, dir_, bases[i], config_,
                      trusted ? Segment::OpenMode::trust : Segment::OpenMode::recover, now_ms);
    if (!seg.ok()) return seg.status();
    if (!trusted) recovered_at_open_ = true;
    truncated_bytes_at_open_ += (*seg)->truncated_bytes();
    const bool torn = (*seg)->truncated_bytes() > 0 || (*seg)->next_offset() > next_base;
    if (torn && !last) {
      // Everything after a torn segment is unreachable: drop the later segments, as Kafka does,
      // and keep appending to the torn one.
      for (size_t j = i + 1; j < bases.size(); ++j) {
        for (const auto& p :
             {segment_log_path(dir_, bases[j]), segment_index_path(dir_, bases[j]),
              segment_time_index_path(dir_, bases[j]), segment_txn_index_path(dir_, bases[j]),
              segment_summary_path(dir_, bases[j])}) {
          Status st = env_->remove_file(p);
          if (!st.ok() && st.code() != Errc::not_found) return st;
        }
      }
      segments_.push_back(std::move(*seg));
      break;
    }
    // A middle segment is immutable: close its writers (fsync if recovery rewrote its indexes).
    if (!last) STRATA_RETURN_IF_ERROR((*seg)->seal(/*sync=*/!trusted));
    segments_.push_back(std::move(*seg));
  }
  if (segments_.empty()) {
    auto seg = Segment::create(env_, dir_, 0, config_);
    if (!seg.ok()) return seg.status();
    segments_.push_back(std::move(*seg));
    STRATA_RETURN_IF_ERROR(env_->sync_dir(dir_));
  }
  const auto& active = segments_.back();
  const int64_t log_end = active->next_offset();
  log_start_offset_.store(segments_.front()->base_offset());
  // DeleteRecords moved the log start past the first segment's base: keep it.
  const std::optional<int64_t> persisted_start = read_offset_file(env_, dir_, kLogStartOffsetFile);
  if (persisted_start && *persisted_start > segments_.front()->base_offset()) {
    log_start_offset_.store(std::min(*persisted_start, log_end));
  }
  // Everything that survived the open is on disk (or trusted after a clean close).
  log_end_offset_.store(log_end);
  durable_end_offset_.store(log_end);
  high_watermark_.store(log_end);

  if (recovered_at_open_) {
    // Make the truncation and rebuilt indexes durable before anything is appended after them.
    STRATA_RETURN_IF_ERROR(active->sync_log());
    STRATA_RETURN_IF_ERROR(active->sync_indexes());
    STRATA_RETURN_IF_ERROR(env_->sync_dir(dir_));
  }
  // A torn tail was cut below an offset these files recorded (DeleteRecords or a cleaner pass over
  // records that were never fsynced). Left alone, the next open would take the stale log start
  // again and hide the records appended from here on, and the cleaner would treat new records as
  // already compacted. Rewrite both to the log end before any append reuses those offsets.
  if (persisted_start && *persisted_start > log_end) {
    STRATA_RETURN_IF_ERROR(write_log_start_offset(log_start_offset()));
  }
  const std::optional<int64_t> cleaner_checkpoint =
      read_offset_file(env_, dir_, kCleanerCheckpointFile);
  if (cleaner_checkpoint && *cleaner_checkpoint > log_end) {
    STRATA_RETURN_IF_ERROR(write_file_atomically(env_, join_path(dir_, kCleanerCheckpointFile),
                                                 std::to_string(log_end) + "\n"));
  }
  recovery_point_ = clean ? active->next_offset() : active->base_offset();
  // After a clean close the file already says so, durably (close() wrote it before the marker):
  // not rewritten, which saves a broker of thousands of partitions three syncs per partition.
  if (!clean || read_recovery_point(env_, dir_) != recovery_point_) {
    STRATA_RETURN_IF_ERROR(write_recovery_point(recovery_point_));
  }
  if (clean) {
    // From here on a crash is unclean again.
    STRATA_RETURN_IF_ERROR(env_->remove_file(clean_marker));
    STRATA_RETURN_IF_ERROR(env_->sync_dir(dir_));
  }
  return Status::Ok();
}

Status PartitionLog::write_recovery_point(int64_t offset) {
  return write_file_atomically(env_, join_path(dir_, kRecoveryPointFile),
                               std::to_string(offset) + "\n");
}

}  // namespace strata::storage
