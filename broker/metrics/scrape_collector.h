// ScrapeCollector: the prometheus::Collectable the /metrics endpoint serves. At each scrape it
// gathers BrokerMetrics' counters plus gauges computed on the spot from broker state — partition
// log offsets and sizes (TopicRegistry), consumer-group lag (GroupCoordinator), RocksDB block
// cache, memtable, pending-compaction and checkpoint age of primary-key partitions (PkTables),
// process CPU/memory/fds — so none of those costs anything per request. Owned by MetricsExporter;
// Collect() runs on the HTTP server's threads and only uses thread-safe broker accessors.
#pragma once

#include <prometheus/collectable.h>

#include <memory>
#include <vector>

namespace strata::broker {
struct Services;
struct TopicEntry;
}  // namespace strata::broker

namespace strata::broker::metrics {

class ScrapeCollector : public prometheus::Collectable {
 public:
  explicit ScrapeCollector(Services& svc) : svc_(svc) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  using TopicList = std::vector<std::shared_ptr<const TopicEntry>>;
  void collect_partitions(std::vector<prometheus::MetricFamily>& out,
                          const TopicList& topics) const;
  void collect_cluster(std::vector<prometheus::MetricFamily>& out) const;
  void collect_group_lag(std::vector<prometheus::MetricFamily>& out) const;
  void collect_pk(std::vector<prometheus::MetricFamily>& out, const TopicList& topics) const;

  Services& svc_;
};

}  // namespace strata::broker::metrics
