// KeyChooser: picks key indexes 0..n-1 for the lookup load, uniformly or Zipf-distributed (rank r
// with probability ~ 1/r^s; ranks are scattered over the key space by a fixed bijection so the hot
// keys do not all sit in one partition). Keys are "key:%012d" (redis-benchmark's format).
//
// Owned by tools/perf. The CDF table is shared read-only; each thread owns its own Rng.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::tools::perf {

class KeyChooser {
 public:
  // `spec`: "uniform", "zipf" (s = 0.99) or "zipf:<s>".
  static Result<KeyChooser> make(const std::string& spec, int64_t n);
  int64_t next(std::mt19937_64& rng) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int64_t n_ = 1;
  uint64_t stride_ = 1;                       // bijection rank -> index: rank * stride mod n
  std::shared_ptr<std::vector<double>> cdf_;  // zipf only
};

// Writes "key:%012d" of `index` into `buf` (>= 17 bytes); returns the length (16).
size_t format_key(char* buf, int64_t index);

}  // namespace strata::tools::perf
