// BrokerMetrics: the counters the request path bumps — requests, errors and latency per API,
// connections, primary-key lookup latency — as plain relaxed atomics reached through cached
// pointers (an array slot per api key), so instrumentation costs no lock and nothing per record.
// Per-topic counters (bytes/records in, bytes out, PK lookups/keys/rows applied) live on the
// TopicEntry itself (broker/metrics/topic_counters.h, TopicEntry::counters); collect() reads them
// for the topics it is given. collect() turns everything into Prometheus families at scrape time.
// Owned by Broker (broker/broker.h: metrics()); every method is thread-safe.
#pragma once

#include <prometheus/metric_family.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "broker/metrics/atomic_histogram.h"
#include "broker/metrics/topic_counters.h"
#include "protocol/wire/errors.h"

namespace strata::broker {
struct TopicEntry;
class RequestMemoryPool;
}  // namespace strata::broker

namespace strata::broker::metrics {

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
  void request_error(int16_t api_key, protocol::ErrorCode error_code, uint64_t n = 1);

  // A request's check refused by the authorizer (broker/security/authorize.h).
  void authorization_denied(int16_t api_key);

  void connection_opened();
  void connection_closed();
  // A SASL authentication that failed (wrong password, unknown user, bad message).
  void authentication_failed() { authentication_failures_.fetch_add(1, std::memory_order_relaxed); }

  AtomicHistogram& pk_lookup_latency() { return pk_lookup_latency_; }

  // Every family this object holds (request, connection and PK latency families) plus the
  // per-topic counter families with one series per entry of `topics` (the live topics: a deleted
  // topic's series are gone at the next scrape).
  std::vector<prometheus::MetricFamily> collect(
      std::span<const std::shared_ptr<const TopicEntry>> topics) const;

  int64_t active_connections() const { return active_connections_.load(); }

  // The connections' request pool (queued.max.request.bytes and the kept body buffers), read at
  // scrape time. Set once at start, before the metrics endpoint serves.
  void set_request_pool(std::shared_ptr<const RequestMemoryPool> pool) {
    request_pool_ = std::move(pool);
  }

 private:
  static constexpr int kMinCode = -1;
  static constexpr int kMaxCode = 140;
  struct ApiSlot {
    bool served = false;
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> denials{0};  // authorization denials
    AtomicHistogram latency;
    std::array<std::atomic<uint64_t>, kMaxCode - kMinCode + 1> errors{};
  };
  static constexpr size_t kSlots = 128 + 100;  // keys 0..127, then the extension range (100 keys)
  ApiSlot* slot(int16_t api_key);
  const ApiSlot* slot(int16_t api_key) const;
  static int16_t key_of(size_t index);

  std::unique_ptr<ApiSlot[]> slots_;
  std::atomic<int64_t> active_connections_{0};
  std::shared_ptr<const RequestMemoryPool> request_pool_;
  std::atomic<uint64_t> connections_total_{0};
  std::atomic<uint64_t> authentication_failures_{0};
  AtomicHistogram pk_lookup_latency_;
};

}  // namespace strata::broker::metrics
