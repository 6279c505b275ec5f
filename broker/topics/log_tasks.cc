// Retention and cleaner threads (see log_tasks.h).
#include "broker/topics/log_tasks.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <functional>

#include "broker/config/dynamic_config.h"
#include "broker/pk/pk_tables.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "storage/retention.h"

namespace strata::broker {

LogTasks::LogTasks(Services& svc)
    : svc_(svc),
      throttler_(svc.config.log_cleaner_io_max_bytes_per_second),
      cleaner_(&throttler_) {}

LogTasks::~LogTasks() { stop(); }

void LogTasks::start() {
  retention_thread_ = std::thread([this] { retention_loop(); });
  if (svc_.config.log_cleaner_enable) {
    const auto n = static_cast<size_t>(std::max(1, svc_.config.log_cleaner_threads));
    for (size_t i = 0; i < n; ++i) {
      cleaner_threads_.emplace_back([this, i, n] { cleaner_loop(i, n); });
    }
  }
}

void LogTasks::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
  for (auto& t : cleaner_threads_) {
    if (t.joinable()) t.join();
  }
  cleaner_threads_.clear();
}

bool LogTasks::wait_for(int64_t ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stopping_; });
  return !stopping_;
}

double LogTasks::io_rate() const {
  auto v = svc_.dynamic_config.value("log.cleaner.io.max.bytes.per.second");
  double rate = svc_.config.log_cleaner_io_max_bytes_per_second;
  if (v) {
    double x = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec == std::errc() && x > 0) rate = x;
  }
  return rate;
}

void LogTasks::retention_loop() {
  while (wait_for(svc_.config.log_retention_check_interval_ms)) {
    for (const auto& topic : svc_.topics.list()) {
      const storage::RetentionPolicy policy{
          topic->config.delete_enabled, topic->config.retention_ms, topic->config.retention_bytes};
      for (size_t p = 0; p < topic->partitions.size(); ++p) {
        auto r = storage::Retention::enforce(*topic->partitions[p], policy, now_ms());
        if (!r.ok()) {
          spdlog::warn("retention of {}-{}: {}", topic->name, p, r.status().to_string());
        } else if (r->deleted_segments > 0) {
          spdlog::info("retention deleted {} segment(s) ({} bytes) of {}-{}; log start offset {}",
                       r->deleted_segments, r->deleted_bytes, topic->name, p, r->log_start_offset);
        }
        maybe_request_pk_checkpoint(*topic, static_cast<int32_t>(p), policy);
      }
    }
  }
}

// a PK partition whose first segment could go (retention may delete, or DeleteRecords
// moved the log start past it) but lies above the state's bound gets a checkpoint, which flushes
// the memtable and moves the bound, so the next pass proceeds instead of stalling.
void LogTasks::maybe_request_pk_checkpoint(const TopicEntry& topic, int32_t p,
                                           const storage::RetentionPolicy& policy) {
  if (!pkindex::is_pk_table(topic.configs)) return;
  const storage::PartitionLog& log = *topic.partitions[static_cast<size_t>(p)];
  const auto bases = log.segment_base_offsets();
  if (bases.size() < 2) return;
  const int64_t bound = log.retention_bound();
  const bool may_delete =
      (policy.delete_enabled && (policy.retention_ms >= 0 || policy.retention_bytes >= 0)) ||
      log.log_start_offset() >= bases[1];
  if (may_delete && bound < bases[1] && log.high_watermark() > bound) {
    svc_.pk_tables.request_checkpoint(topic, p);
  }
}

void LogTasks::cleaner_loop(size_t index, size_t threads) {
  int64_t backoff = 0;
  while (wait_for(backoff)) {
    throttler_.set_rate(io_rate());
    bool any = false;
    for (const auto& topic : svc_.topics.list()) {
      if (!topic->config.compact) continue;
      storage::CleanerPolicy policy;
      policy.min_cleanable_ratio = topic->config.min_cleanable_dirty_ratio;
      policy.min_compaction_lag_ms = topic->config.min_compaction_lag_ms;
      policy.delete_retention_ms = topic->config.delete_retention_ms;
      for (size_t p = 0; p < topic->partitions.size(); ++p) {
        auto& log = *topic->partitions[p];
        if (std::hash<std::string>{}(log.dir()) % threads != index) continue;
        auto r = cleaner_.clean(log, policy, now_ms());
        if (!r.ok()) {
          spdlog::warn("cleaning {}-{}: {}", topic->name, p, r.status().to_string());
        } else if (r->cleaned) {
          any = true;
          spdlog::info(
              "cleaned {}-{}: {} segment(s) rewritten, {} -> {} bytes, {} records and {} "
              "tombstones removed",
              topic->name, p, r->segments_rewritten, r->bytes_before, r->bytes_after,
              r->records_removed, r->tombstones_removed);
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          if (stopping_) return;
        }
      }
    }
    backoff = any ? 0 : svc_.config.log_cleaner_backoff_ms;
  }
}

}  // namespace strata::broker
