#include "broker/topics/partition_watchers.h"

#include "storage/partition_log.h"

namespace strata::broker {

void PartitionWatchers::add_locked(Table& table, const void* p, const std::shared_ptr<Watch>& w) {
  auto& v = table[p];
  // Drop watches that already fired or were abandoned so idle partitions don't accumulate them.
  std::erase_if(v, [](const std::weak_ptr<Watch>& x) {
    auto s = x.lock();
    return !s || s->fired();
  });
  v.push_back(w);
}

std::shared_ptr<PartitionWatchers::Watch> PartitionWatchers::watch(
    const std::vector<const void*>& partitions, std::function<void()> wake) {
  auto w = std::make_shared<Watch>(std::move(wake));
  std::lock_guard lk(mu_);
  for (const void* p : partitions) add_locked(watches_, p, w);
  count_.store(watches_.size());
  return w;
}

std::shared_ptr<PartitionWatchers::Watch> PartitionWatchers::watch_logs(
    const std::vector<const storage::PartitionLog*>& logs, const std::vector<int64_t>& seen_hw,
    std::function<void()> wake, const std::vector<int64_t>& seen_end) {
  auto on_end = [&](size_t i) { return i < seen_end.size() && seen_end[i] >= 0; };
  auto w = std::make_shared<Watch>(std::move(wake));
  {
    std::lock_guard lk(mu_);
    for (size_t i = 0; i < logs.size(); ++i) {
      add_locked(watches_, logs[i], w);  // log-end waiters too: followers learn the HW early
      if (on_end(i)) add_locked(end_watches_, logs[i], w);
    }
    count_.store(watches_.size());
    end_count_.store(end_watches_.size());
  }
  for (size_t i = 0; i < logs.size(); ++i) {
    const bool moved = (on_end(i) && logs[i]->log_end_offset() != seen_end[i]) ||
                       logs[i]->high_watermark() != seen_hw[i];
    if (moved) {
      w->fire();
      break;
    }
  }
  return w;
}

void PartitionWatchers::notify_in(Table& table, std::atomic<size_t>& count, const void* partition) {
  if (count.load(std::memory_order_relaxed) == 0) return;  // nobody long-polls: no lock
  std::vector<std::weak_ptr<Watch>> fire;
  {
    std::lock_guard lk(mu_);
    auto it = table.find(partition);
    if (it == table.end()) return;
    fire.swap(it->second);
    table.erase(it);
    count.store(table.size());
  }
  for (auto& w : fire) {
    if (auto s = w.lock()) s->fire();
  }
}

void PartitionWatchers::notify(const void* partition) { notify_in(watches_, count_, partition); }

void PartitionWatchers::notify_log_end(const void* partition) {
  notify_in(end_watches_, end_count_, partition);
}

void PartitionWatchers::wake_all() {
  Table all;
  Table ends;
  {
    std::lock_guard lk(mu_);
    all.swap(watches_);
    ends.swap(end_watches_);
    count_.store(0);
    end_count_.store(0);
  }
  for (auto* t : {&all, &ends}) {
    for (auto& [p, v] : *t) {
      for (auto& w : v) {
        if (auto s = w.lock()) s->fire();
      }
    }
  }
}

}  // namespace strata::broker
