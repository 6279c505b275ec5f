#include "broker/cluster/replica_fetch.h"

#include <algorithm>

namespace strata::broker::cluster {

std::optional<EpochEnd> diverging_epoch(const EndOffsetForEpoch& leader_history,
                                        int64_t fetch_offset, int32_t last_fetched_epoch) {
  if (last_fetched_epoch < 0) return std::nullopt;  // nothing fetched yet: nothing to diverge
  const EpochEnd end = leader_history(last_fetched_epoch);
  // The follower's last epoch ends later in its log than in ours, or we never had that epoch.
  if (end.epoch < last_fetched_epoch || end.end_offset < fetch_offset) return end;
  return std::nullopt;
}

Result<FollowerPartition::Next> FollowerPartition::on_response(const FetchedPartition& p) {
  using Error = FetchedPartition::Error;
  switch (p.error) {
    case Error::none:
      break;
    case Error::offset_out_of_range:
      if (p.log_start_offset >= 0 && log_.log_end() < p.log_start_offset) {
        // Retention moved the leader's start past our end: what we have is of no use.
        ++truncations_;
        STRATA_RETURN_IF_ERROR(log_.reset_to(p.log_start_offset));
        return Next::fetch;
      }
      if (p.leader_log_end >= 0 && log_.log_end() > p.leader_log_end) {
        ++truncations_;
        STRATA_RETURN_IF_ERROR(log_.truncate_to(std::max<int64_t>(p.leader_log_end, 0)));
        return Next::fetch;
      }
      return Next::backoff;
    case Error::fenced_leader_epoch:
    case Error::not_leader:
      return Next::wait_for_leader_change;
    case Error::unknown_leader_epoch:
    case Error::other:
      return Next::backoff;
  }
  if (p.diverging) {
    // Truncate to where both histories agree at most, as far as this epoch goes.
    const EpochEnd mine = log_.end_offset_for_epoch(p.diverging->epoch);
    int64_t to = p.diverging->end_offset;
    if (mine.end_offset >= 0) to = std::min(to, mine.end_offset);
    if (p.diverging->epoch < 0 || to < 0) to = 0;
    to = std::min(to, log_.log_end());
    ++truncations_;
    STRATA_RETURN_IF_ERROR(log_.truncate_to(to));
    return Next::fetch;
  }
  if (!p.records.empty()) STRATA_RETURN_IF_ERROR(log_.append(p.records));
  if (p.high_watermark >= 0) log_.set_high_watermark(std::min(p.high_watermark, log_.log_end()));
  return Next::fetch;
}

}  // namespace strata::broker::cluster
