// PartitionLog admin hooks: DeleteRecords' log start offset (persisted in
// `log-start-offset`), the owner's retention bound and dynamic LogConfig updates
// (see partition_log.h and docs/retention.md).
#include <algorithm>
#include <limits>

#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"

namespace strata::storage {

int64_t PartitionLog::retention_bound() const {
  std::lock_guard<std::mutex> lock(bound_mu_);
  return retention_bound_ ? retention_bound_() : std::numeric_limits<int64_t>::max();
}

Status PartitionLog::write_log_start_offset(int64_t offset) {
  return write_file_atomically(env_, join_path(dir_, kLogStartOffsetFile),
                               std::to_string(offset) + "\n");
}

Status PartitionLog::advance_log_start_offset(int64_t offset) {
  std::lock_guard<std::mutex> lock(append_mu_);
  if (deleted_) return Status(Errc::not_found, "log " + dir_ + " was deleted");
  if (offset < 0 || offset > log_end_offset()) {
    return Status(Errc::out_of_range, "log start " + std::to_string(offset) + " beyond log end " +
                                          std::to_string(log_end_offset()));
  }
  if (offset <= log_start_offset()) return Status::Ok();
  // Persist first: a crash after the write but before the store only hides records sooner.
  STRATA_RETURN_IF_ERROR(write_log_start_offset(offset));
  std::unique_lock<std::shared_mutex> state(state_mu_);
  log_start_offset_.store(offset, std::memory_order_release);
  return Status::Ok();
}

Result<int64_t> PartitionLog::delete_records_before(int64_t offset) {
  const int64_t hw = high_watermark();
  if (offset < 0 || offset > hw) {
    return Status(Errc::out_of_range, "offset " + std::to_string(offset) +
                                          " is outside [0, high watermark " + std::to_string(hw) +
                                          "]");
  }
  const int64_t target = std::min(offset, retention_bound());
  STRATA_RETURN_IF_ERROR(advance_log_start_offset(target));
  return log_start_offset();
}

void PartitionLog::set_config(const LogConfig& config) {
  std::lock_guard<std::mutex> lock(append_mu_);
  config_ = config;
  config_.replicated = replicated_;  // the mode is fixed at open
}

LogConfig PartitionLog::config() const {
  std::lock_guard<std::mutex> lock(append_mu_);
  return config_;
}

}  // namespace strata::storage
