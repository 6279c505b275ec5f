#include "broker/metrics/atomic_histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace strata::broker::metrics {

namespace {
constexpr uint64_t kMaxNanosInt = uint64_t{1} << 62;  // leaves headroom for many more adds
constexpr double kMaxNanos = static_cast<double>(kMaxNanosInt);
constexpr double kLatencyBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                      1,      2.5,     5,      10,    30};
}  // namespace

std::span<const double> latency_buckets() { return kLatencyBuckets; }

AtomicHistogram::AtomicHistogram(std::span<const double> bounds)
    : bounds_(bounds.begin(), bounds.end()), counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void AtomicHistogram::observe(double value) {
  // Prometheus buckets are "less than or equal": the first bound >= value.
  const size_t i = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                       bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  // Negative values and NaN add nothing to the sum; one observation adds at most 2^62 units.
  const double nanos = value * 1e9;
  if (nanos > 0) {
    sum_nanos_.fetch_add(
        nanos < kMaxNanos ? static_cast<uint64_t>(std::llround(nanos)) : kMaxNanosInt,
        std::memory_order_relaxed);
  }
}

uint64_t AtomicHistogram::count() const {
  uint64_t n = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) n += counts_[i].load(std::memory_order_relaxed);
  return n;
}

prometheus::ClientMetric::Histogram AtomicHistogram::snapshot() const {
  prometheus::ClientMetric::Histogram h;
  uint64_t cumulative = 0;
  h.bucket.reserve(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    prometheus::ClientMetric::Bucket b;
    b.cumulative_count = cumulative;
    b.upper_bound = i < bounds_.size() ? bounds_[i] : std::numeric_limits<double>::infinity();
    h.bucket.push_back(b);
  }
  h.sample_count = cumulative;
  h.sample_sum = static_cast<double>(sum_nanos_.load(std::memory_order_relaxed)) / 1e9;
  return h;
}

}  // namespace strata::broker::metrics
