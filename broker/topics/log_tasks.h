// LogTasks: the broker's background storage work, on threads of its own so no I/O
// thread ever waits for it:
//   * one retention thread: every log.retention.check.interval.ms, storage::Retention::enforce on
//     every partition with the topic's current retention.ms / retention.bytes / cleanup.policy
//     (read from the TopicRegistry each round, so dynamic changes apply at the next check);
//   * log.cleaner.threads cleaner threads (if log.cleaner.enable): each owns the partitions whose
//     directory hashes to its index and runs storage::LogCleaner passes on compacted topics,
//     sleeping log.cleaner.backoff.ms when nothing was due; cleaner I/O shares one Throttler
//     (log.cleaner.io.max.bytes.per.second, re-read from the dynamic config every round).
//
// Owned by Broker: start() after the TopicRegistry is loaded, stop() (joins) after the I/O threads
// have stopped and before the logs are closed. start/stop from the broker's control thread only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/topics/topic_registry.h"
#include "storage/cleaner/throttler.h"
#include "storage/log_cleaner.h"
#include "storage/retention.h"

namespace strata::broker {

struct Services;

class LogTasks {
 public:
  explicit LogTasks(Services& svc);
  ~LogTasks();

  void start();
  void stop();

 private:
  void retention_loop();
  // asks PkTables for a checkpoint when the PK bound blocks retention.
  void maybe_request_pk_checkpoint(const TopicEntry& topic, int32_t partition,
                                   const storage::RetentionPolicy& policy);
  void cleaner_loop(size_t index, size_t threads);
  // Waits up to `ms` or until stop(); false when stopping.
  bool wait_for(int64_t ms);
  double io_rate() const;

  Services& svc_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  storage::cleaner::Throttler throttler_;
  storage::LogCleaner cleaner_;
  std::thread retention_thread_;
  std::vector<std::thread> cleaner_threads_;
};

}  // namespace strata::broker
