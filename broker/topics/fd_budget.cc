#include "broker/topics/fd_budget.h"

#include <sys/resource.h>

#include <algorithm>
#include <string>

namespace strata::broker {

int64_t partition_fd_estimate(int64_t segments, bool pk, int64_t pk_max_open_files) {
  int64_t n = std::max<int64_t>(segments, 1) + kActiveSegmentExtraFds;
  if (pk) n += std::max<int64_t>(pk_max_open_files, 0) + kPkFixedFds;
  return n;
}

int64_t open_files_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return INT64_MAX;
  return rl.rlim_cur > static_cast<rlim_t>(INT64_MAX) ? INT64_MAX
                                                      : static_cast<int64_t>(rl.rlim_cur);
}

int64_t partition_fd_budget(int64_t limit, int64_t reserved) {
  if (limit == INT64_MAX) return INT64_MAX;
  const int64_t reserve = std::clamp<int64_t>(reserved, 0, limit / 2);
  return std::max<int64_t>(limit - reserve, 0);
}

Status check_fd_budget(int64_t current, int64_t adding, int64_t limit, int64_t reserved) {
  const int64_t budget = partition_fd_budget(limit, reserved);
  if (budget == INT64_MAX || current + adding <= budget) return Status::Ok();
  std::string m("the partitions would need about ");
  m.append(std::to_string(current + adding))
      .append(" file descriptors (")
      .append(std::to_string(current))
      .append(" now, ")
      .append(std::to_string(adding))
      .append(" more), over the broker's budget of ")
      .append(std::to_string(budget))
      .append(" (open files limit ")
      .append(std::to_string(limit))
      .append(" minus ")
      .append(std::to_string(limit - budget))
      .append(" reserved, open.files.reserved); raise the hard limit (ulimit -n, LimitNOFILE)");
  return Status(Errc::too_large, m);
}

}  // namespace strata::broker
