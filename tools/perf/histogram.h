// Histogram: fixed-size log-linear latency histogram (nanoseconds, ~1.6 % bucket width) used by
// every strata-perf mode. record() never allocates; per-thread histograms are merged at the end.
//
// Owned by tools/perf. Not synchronised: one writer thread per instance; merge after joining.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace strata::tools::perf {

class Histogram {
 public:
  // Values below 128 ns get their own bucket; above, 64 buckets per power of two.
  static constexpr int kSubBits = 6;
  static constexpr int kLinear = 128;
  static constexpr int kBuckets = kLinear + 58 * (1 << kSubBits);

  void record(uint64_t ns) {
    ++counts_[index_of(ns)];
    ++total_;
    if (ns > max_) max_ = ns;
    if (ns < min_) min_ = ns;
    sum_ += ns;
  }
  void merge(const Histogram& o);

  uint64_t count() const { return total_; }
  uint64_t max_ns() const { return total_ ? max_ : 0; }
  uint64_t min_ns() const { return total_ ? min_ : 0; }
  double mean_ns() const {
    return total_ ? static_cast<double>(sum_) / static_cast<double>(total_) : 0;
  }
  // The smallest bucket upper bound with at least q (0..1] of the values at or below it, capped
  // by the exact max. 0 when empty.
  uint64_t percentile_ns(double q) const;

  static int index_of(uint64_t ns) {
    if (ns < static_cast<uint64_t>(kLinear)) return static_cast<int>(ns);
    const int msb = std::bit_width(ns) - 1;                                // >= 7
    const int shift = msb - kSubBits;                                      // >= 1
    const int mantissa = static_cast<int>(ns >> shift) - (1 << kSubBits);  // 0..63
    const int idx = kLinear + (shift - 1) * (1 << kSubBits) + mantissa;
    return idx < kBuckets ? idx : kBuckets - 1;
  }
  // Largest value that maps to bucket `idx`.
  static uint64_t upper_bound_of(int idx);

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t max_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t sum_ = 0;
};

}  // namespace strata::tools::perf
