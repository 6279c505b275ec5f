// MetadataView: every broker's copy of the cluster state in etcd (brokers, controller, topics,
// partition states), read once and then kept current by one watch on the cluster prefix. Readers
// take an immutable snapshot; listeners hear about every applied change. If etcd compacted the
// history the watch needed, the view re-reads everything and watches again from there, so it never
// misses a change. A record that does not decode is logged and skipped, never applied.
// Thread-safe; listeners run on the watch's thread, one at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker/cluster/coordination.h"
#include "broker/cluster/records.h"

namespace strata::broker::cluster {

struct VersionedPartition {
  PartitionState state;
  int64_t mod_revision = 0;  // for compare-and-swap
};

struct ClusterSnapshot {
  int64_t revision = 0;  // etcd revision this snapshot reflects
  std::map<int32_t, BrokerRecord> brokers;
  std::optional<ControllerRecord> controller;
  int64_t controller_mod_revision = 0;
  std::map<std::string, TopicRecord> topics;
  std::map<std::string, int64_t> topic_mod_revisions;
  std::map<std::string, std::map<int32_t, VersionedPartition>> partitions;

  const VersionedPartition* partition(const std::string& topic, int32_t index) const;
};

class MetadataView {
 public:
  using Listener = std::function<void(const std::shared_ptr<const ClusterSnapshot>&)>;
  MetadataView(Coordination& coordination, Layout layout);
  ~MetadataView();

  // Reads the cluster state and starts watching. Fails when etcd cannot be read.
  Status start();
  void stop();

  std::shared_ptr<const ClusterSnapshot> snapshot() const;
  // Registers before start() to miss nothing.
  void subscribe(Listener listener);
  // Waits until the view reflects etcd revision `revision` (read-your-writes after a put).
  bool wait_for_revision(int64_t revision, std::chrono::milliseconds timeout) const;

 private:
  Status load_and_watch();
  void on_batch(const WatchBatch& batch);
  void apply(ClusterSnapshot& s, const KeyValue& kv, bool deleted) const;
  void publish(std::shared_ptr<const ClusterSnapshot> s);

  Coordination& coordination_;
  const Layout layout_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::shared_ptr<const ClusterSnapshot> snapshot_;
  std::vector<Listener> listeners_;
  std::unique_ptr<Watch> watch_;
  std::mutex watch_mu_;  // serialises start/stop/re-watch
  bool stopped_ = false;
  std::mutex rewatch_mu_;
  std::thread rewatch_;  // re-reads after a compaction (not on the ending watch's thread)
};

}  // namespace strata::broker::cluster
