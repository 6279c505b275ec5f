#include "broker/topics/partition_watchers.h"

#include "storage/partition_log.h"

namespace strata::broker {

std::shared_ptr<PartitionWatchers::Watch> PartitionWatchers::watch(
    const std::vector<const void*>& partitions, std::function<void()> wake) {
  auto w = std::make_shared<Watch>(std::move(wake));
  std::lock_guard lk(mu_);
  for (const void* p : partitions) {
    auto& v = watches_[p];
    // Drop watches that already fired or were abandoned so idle partitions don't accumulate them.
    std::erase_if(v, [](const std::weak_ptr<Watch>& x) {
      auto s = x.lock();
      return !s || s->fired();
    });
    v.push_back(w);
  }
  count_.store(watches_.size());
  return w;
}

std::shared_ptr<PartitionWatchers::Watch> PartitionWatchers::watch_logs(
    const std::vector<const storage::PartitionLog*>& logs, const std::vector<int64_t>& seen_hw,
    std::function<void()> wake) {
  auto w = watch(std::vector<const void*>(logs.begin(), logs.end()), std::move(wake));
  for (size_t i = 0; i < logs.size(); ++i) {
    if (logs[i]->high_watermark() != seen_hw[i]) {
      w->fire();
      break;
    }
  }
  return w;
}

void PartitionWatchers::notify(const void* partition) {
  if (count_.load(std::memory_order_relaxed) == 0) return;  // nobody long-polls: no lock
  std::vector<std::weak_ptr<Watch>> fire;
  {
    std::lock_guard lk(mu_);
    auto it = watches_.find(partition);
    if (it == watches_.end()) return;
    fire.swap(it->second);
    watches_.erase(it);
    count_.store(watches_.size());
  }
  for (auto& w : fire) {
    if (auto s = w.lock()) s->fire();
  }
}

void PartitionWatchers::wake_all() {
  std::unordered_map<const void*, std::vector<std::weak_ptr<Watch>>> all;
  {
    std::lock_guard lk(mu_);
    all.swap(watches_);
    count_.store(0);
  }
  for (auto& [p, v] : all) {
    for (auto& w : v) {
      if (auto s = w.lock()) s->fire();
    }
  }
}

}  // namespace strata::broker
