// PartitionWatchers: wakes long-polling Fetch requests when a partition they read gets new data.
// A Watch is registered on a set of partitions (keyed by their PartitionLog pointer) and fires at
// most once — on the first advance of what it waits for in any of them (the high watermark for
// consumers; the log end for a follower's fetch, which replicates beyond the high watermark, and
// its high watermark too, which the follower should learn without waiting out its fetch), or
// on wake_all() at shutdown. The Fetch handler then re-reads and, if still short of min_bytes,
// registers a new Watch. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace strata::storage {
class PartitionLog;
}  // namespace strata::storage

namespace strata::broker {

class PartitionWatchers {
 public:
  class Watch {
   public:
    explicit Watch(std::function<void()> wake) : wake_(std::move(wake)) {}
    // Runs the wake function unless it already ran. Returns whether it ran now.
    bool fire() {
      if (fired_.exchange(true)) return false;
      // Moved out so whatever the wake function captures (typically the waiting request, which
      // owns this Watch) is released once it ran: no reference cycle outlives the wake-up.
      auto wake = std::move(wake_);
      wake();
      return true;
    }
    bool fired() const { return fired_.load(); }

   private:
    std::function<void()> wake_;
    std::atomic<bool> fired_{false};
  };

  // Fires on notify() (high-watermark advances) of any of `partitions`.
  std::shared_ptr<Watch> watch(const std::vector<const void*>& partitions,
                               std::function<void()> wake);
  // Watches `logs` (a long-poll's partitions) and fires at once when one of them moved past the
  // high watermark the caller read before registering (`seen_hw[i]`): an append in between found
  // no watch to wake. Where `seen_end` (empty = none) has an entry >= 0, that log is watched for
  // its log end as well (notify_log_end), and fires at once when it is no longer `seen_end[i]`.
  std::shared_ptr<Watch> watch_logs(const std::vector<const storage::PartitionLog*>& logs,
                                    const std::vector<int64_t>& seen_hw, std::function<void()> wake,
                                    const std::vector<int64_t>& seen_end = {});
  // The partition's high watermark advanced.
  void notify(const void* partition);
  // The partition's log end advanced: wakes only the watches waiting on log ends (cheap — no
  // lock — when there are none).
  void notify_log_end(const void* partition);
  void wake_all();

 private:
  using Table = std::unordered_map<const void*, std::vector<std::weak_ptr<Watch>>>;
  // Registers `w` on `p` in `table`; mu_ held.
  static void add_locked(Table& table, const void* p, const std::shared_ptr<Watch>& w);
  void notify_in(Table& table, std::atomic<size_t>& count, const void* partition);

  std::mutex mu_;
  Table watches_;      // high-watermark waiters
  Table end_watches_;  // log-end waiters
  std::atomic<size_t> count_{0};
  std::atomic<size_t> end_count_{0};
};

}  // namespace strata::broker
