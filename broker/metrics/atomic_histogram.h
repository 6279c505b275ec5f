// AtomicHistogram: a fixed-bucket histogram whose observe() is two relaxed atomic adds — no lock,
// no CAS loop, no allocation — for per-request latencies on the I/O threads. The sum is kept as an
// integer count of 1e-9 units (nanoseconds for latencies in seconds) and converted at snapshot.
// snapshot() (the scrape thread) returns Prometheus' cumulative form. Owned by broker/metrics
// (BrokerMetrics); observe() and snapshot() may be called from any thread concurrently.
#pragma once

#include <prometheus/client_metric.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace strata::broker::metrics {

// Upper bounds (seconds) used for request and lookup latencies: 100 us .. 30 s.
std::span<const double> latency_buckets();

class AtomicHistogram {
 public:
  // `bounds`: strictly ascending finite upper bounds; +Inf is implicit.
  explicit AtomicHistogram(std::span<const double> bounds = latency_buckets());
  AtomicHistogram(const AtomicHistogram&) = delete;
  AtomicHistogram& operator=(const AtomicHistogram&) = delete;

  void observe(double value);
  // Cumulative buckets (the last one is +Inf), sample count (= the +Inf bucket) and sum.
  prometheus::ClientMetric::Histogram snapshot() const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1, not cumulative
  std::atomic<uint64_t> sum_nanos_{0};               // sum of observed values, in units of 1e-9
};

}  // namespace strata::broker::metrics
