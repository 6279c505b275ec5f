// Histogram merge and percentiles (see histogram.h).
#include "tools/perf/histogram.h"

#include <algorithm>
#include <cmath>

namespace strata::tools::perf {

void Histogram::merge(const Histogram& o) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  total_ += o.total_;
  sum_ += o.sum_;
  max_ = std::max(max_, o.max_);
  min_ = std::min(min_, o.min_);
}

uint64_t Histogram::upper_bound_of(int idx) {
  if (idx < kLinear) return static_cast<uint64_t>(idx);
  const int rel = idx - kLinear;
  const int shift = rel / (1 << kSubBits) + 1;
  const uint64_t mantissa = static_cast<uint64_t>(rel % (1 << kSubBits)) + (1u << kSubBits);
  return ((mantissa + 1) << shift) - 1;
}

uint64_t Histogram::percentile_ns(double q) const {
  if (total_ == 0) return 0;
  const auto want =
      static_cast<uint64_t>(std::max(1.0, std::ceil(q * static_cast<double>(total_))));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= want) return std::min(upper_bound_of(i), max_);
  }
  return max_;
}

}  // namespace strata::tools::perf
