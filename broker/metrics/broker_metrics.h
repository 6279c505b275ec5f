// BrokerMetrics: the counters the request path bumps — requests, errors and latency per API,
// connections, bytes/records per topic, primary-key lookups and applied rows — as plain relaxed
// atomics reached through cached pointers (an array slot per api key, a per-topic entry found by
// topic id), so instrumentation costs no lock on the hot path beyond a shared lock for the topic
// lookup, and nothing per record. collect() turns them into Prometheus families at scrape time.
// Owned by Broker (broker/broker.h: metrics()); every method is thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <prometheus/metric_family.h>

#include "broker/metrics/atomic_histogram.h"
#include "protocol/wire/uuid.h"

namespace strata::broker {
struct TopicEntry;
}  // namespace strata::broker

namespace strata::broker::metrics {

// Counters of one topic; the object lives as long as the topic exists (pruned at scrape after a
// delete), so callers may keep the reference for the length of a request.
struct TopicCounters {
  TopicCounters(std::string n, protocol::Uuid i) : name(std::move(n)), id(i) {}
  const std::string name;
  const protocol::Uuid id;
  std::atomic<uint64_t> bytes_in{0};     // Produce: batch bytes appended
  std::atomic<uint64_t> records_in{0};   // Produce: records appended
  std::atomic<uint64_t> bytes_out{0};    // Fetch: record bytes sent
  std::atomic<uint64_t> pk_lookups{0};   // Lookup/PrefixLookup partition requests served
  std::atomic<uint64_t> pk_keys{0};      // keys looked up (PrefixLookup: rows returned)
  std::atomic<uint64_t> pk_rows_applied{0};  // changelog records applied to the PK state
};

// Display name of an api key ("Produce", "Lookup", ...); "Api<key>" when unknown.
std::string api_name(int16_t api_key);

class BrokerMetrics {
 public:
  // `api_keys`: the served keys (handler_table()); only these get request series.
  explicit BrokerMetrics(const std::vector<int16_t>& api_keys);
  ~BrokerMetrics();

  void request_received(int16_t api_key);
  void request_completed(int16_t api_key, double seconds);
  // A Kafka error code (!= 0) answered for `api_key` (top-level or per partition).
  void request_error(int16_t api_key, int16_t error_code, uint64_t n = 1);

  void connection_opened();
  void connection_closed();

  // The counters of `topic` (created on first use; found by topic id afterwards).
  TopicCounters& topic(const TopicEntry& topic);
  AtomicHistogram& pk_lookup_latency() { return pk_lookup_latency_; }

  // Drops the counters of topics whose id is not in `live` (deleted topics).
  void prune_topics(const std::vector<protocol::Uuid>& live_ids);
  // Every family this object holds (request, connection, topic and PK counter families).
  std::vector<prometheus::MetricFamily> collect() const;

  int64_t active_connections() const { return active_connections_.load(); }

 private:
  static constexpr int kMinCode = -1;
  static constexpr int kMaxCode = 140;
  struct ApiSlot {
    bool served = false;
    std::atomic<uint64_t> requests{0};
    AtomicHistogram latency;
    std::array<std::atomic<uint64_t>, kMaxCode - kMinCode + 1> errors{};
  };
  static constexpr size_t kSlots = 128 + 100;  // keys 0..127, then 16000..16099
  ApiSlot* slot(int16_t api_key);
  const ApiSlot* slot(int16_t api_key) const;
  static int16_t key_of(size_t index);

  std::unique_ptr<ApiSlot[]> slots_;
  std::atomic<int64_t> active_connections_{0};
  std::atomic<uint64_t> connections_total_{0};
  AtomicHistogram pk_lookup_latency_;

  mutable std::shared_mutex topics_mu_;
  struct UuidHash {
    size_t operator()(const protocol::Uuid& u) const noexcept;
  };
  std::unordered_map<protocol::Uuid, std::shared_ptr<TopicCounters>, UuidHash> topics_;
};

}  // namespace strata::broker::metrics
