// PkTables' checkpoint thread and retention requests (see pk_tables.h and
// docs/pk-tables.md "Checkpoints").
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>

#include "broker/pk/pk_tables.h"
#include "pkindex/pk_ttl.h"

namespace strata::broker {

namespace {

constexpr int64_t kTickMs = 250;

int64_t snapshot_interval_ms(const TopicEntry& topic) {
  auto it = topic.configs.find(std::string(pkindex::kSnapshotIntervalMs));
  int64_t v = pkindex::kDefaultSnapshotIntervalMs;
  if (it != topic.configs.end()) {
    int64_t x = 0;
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), x);
    if (ec == std::errc() && x > 0) v = x;
  }
  return v;
}

}  // namespace

PkTables::Key PkTables::key_of(const TopicEntry& topic, int32_t partition) {
  return {std::string(reinterpret_cast<const char*>(topic.id.bytes.data()), topic.id.bytes.size()),
          partition};
}

void PkTables::start_tasks(Tasks tasks) {
  {
    std::lock_guard lk(mu_);
    tasks_ = tasks;
  }
  checkpoint_thread_ = std::thread([this] { checkpoint_loop(); });
}

void PkTables::stop_tasks() {
  {
    std::lock_guard lk(mu_);
    stop_tasks_ = true;
  }
  cv_.notify_all();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
}

void PkTables::request_checkpoint(const TopicEntry& topic, int32_t partition) {
  {
    std::lock_guard lk(mu_);
    requested_.insert(key_of(topic, partition));
  }
  cv_.notify_all();
}

void PkTables::checkpoint_loop() {
  // When each partition last got (or was first seen without) a checkpoint; this thread only.
  std::map<Key, int64_t> last_ms;
  for (;;) {
    std::set<Key> requested;
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, std::chrono::milliseconds(kTickMs),
                   [this] { return stop_tasks_ || !requested_.empty(); });
      if (stop_tasks_) return;
      requested.swap(requested_);
    }
    const int64_t now = pkindex::system_clock_ms();
    for (const auto& topic : topics_.list()) {
      if (!pkindex::is_pk_table(topic->configs)) continue;
      const int64_t interval = snapshot_interval_ms(*topic);
      for (int32_t p = 0; p < static_cast<int32_t>(topic->partitions.size()); ++p) {
        const Key key = key_of(*topic, p);
        std::shared_ptr<pkindex::PkState> state;
        {
          std::lock_guard lk(mu_);
          if (stop_tasks_) return;
          auto it = states_.find(key);
          if (it == states_.end()) continue;  // not opened (yet) or offline
          state = it->second;
        }
        // The history index follows the log's start (retention, DeleteRecords): a no-op until
        // it moved.
        if (state->options().table.history) {
          auto trimmed = state->trim_history_to_log_start();
          if (!trimmed.ok()) {
            spdlog::warn("trimming the history of {}-{}: {}", topic->name, p,
                         trimmed.status().to_string());
          } else if (*trimmed > 0) {
            spdlog::info("history of {}-{} trimmed to offset {}: {} changes removed", topic->name,
                         p, state->history_horizon(), *trimmed);
          }
        }
        // Memtable bloom filters to the partitions that write, idle ones flushed
        // (PkState::tend_memtable).
        if (auto step =
                state->tend_memtable(pkindex::PkState::steady_ms(), tasks_.memtable_idle_flush_ms);
            !step.ok()) {
          spdlog::warn("memtable upkeep of {}-{}: {}", topic->name, p, step.status().to_string());
        }
        auto [lit, fresh] = last_ms.try_emplace(key, now);
        if (fresh) {
          const int64_t created = state->newest_checkpoint().created_ms;
          if (created > 0) lit->second = created;
        }
        if (!requested.count(key) && now - lit->second < interval) continue;
        lit->second = now;
        if (tasks_.compact_before_checkpoint) {
          Status cst = state->compact();
          if (!cst.ok()) spdlog::warn("compacting {}-{}: {}", topic->name, p, cst.to_string());
        }
        const int64_t before = state->newest_checkpoint().offset;
        auto c = state->create_checkpoint();
        if (!c.ok()) {
          spdlog::warn("checkpoint of {}-{} failed: {}", topic->name, p, c.status().to_string());
        } else if (c->offset != before) {
          spdlog::info("checkpoint of {}-{} at offset {}", topic->name, p, c->offset);
        }
      }
    }
  }
}

}  // namespace strata::broker
