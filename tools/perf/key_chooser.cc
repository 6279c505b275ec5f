// KeyChooser (see key_chooser.h).
#include "tools/perf/key_chooser.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace strata::tools::perf {

Result<KeyChooser> KeyChooser::make(const std::string& spec, int64_t n) {
  if (n <= 0) return Status(Errc::invalid_argument, "--keys must be > 0");
  KeyChooser k;
  k.n_ = n;
  if (spec == "uniform") {
    k.name_ = "uniform";
    return k;
  }
  if (spec.rfind("zipf", 0) != 0) {
    return Status(Errc::invalid_argument, "--distribution: uniform | zipf[:s], not " + spec);
  }
  double s = 0.99;
  if (spec.size() > 4) {
    if (spec[4] != ':') return Status(Errc::invalid_argument, "--distribution: bad " + spec);
    char* end = nullptr;
    s = std::strtod(spec.c_str() + 5, &end);
    if (end == spec.c_str() + 5 || *end != '\0' || !(s > 0) || s > 10) {
      return Status(Errc::invalid_argument, "--distribution: zipf exponent must be in (0, 10]");
    }
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "zipf:%.3g", s);
  k.name_ = buf;
  k.cdf_ = std::make_shared<std::vector<double>>(static_cast<size_t>(n));
  double sum = 0;
  for (int64_t r = 0; r < n; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r + 1), s);
    (*k.cdf_)[static_cast<size_t>(r)] = sum;
  }
  for (double& c : *k.cdf_) c /= sum;
  // A stride coprime with n near n * golden ratio scatters consecutive ranks.
  uint64_t stride = static_cast<uint64_t>(static_cast<double>(n) * 0.6180339887) | 1;
  while (std::gcd(stride, static_cast<uint64_t>(n)) != 1) stride += 2;
  k.stride_ = stride % static_cast<uint64_t>(n) == 0 ? 1 : stride;
  return k;
}

int64_t KeyChooser::next(std::mt19937_64& rng) const {
  if (!cdf_) return static_cast<int64_t>(rng() % static_cast<uint64_t>(n_));
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  const auto it = std::lower_bound(cdf_->begin(), cdf_->end(), u);
  const auto rank = static_cast<uint64_t>(std::min<ptrdiff_t>(it - cdf_->begin(), n_ - 1));
  return static_cast<int64_t>((static_cast<unsigned __int128>(rank) * stride_) %
                              static_cast<uint64_t>(n_));
}

size_t format_key(char* buf, int64_t index) {
  return static_cast<size_t>(std::snprintf(buf, 24, "key:%012" PRId64, index));
}

}  // namespace strata::tools::perf
