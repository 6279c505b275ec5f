// Helpers shared by the record/codec unit tests: deterministic random and compressible data,
// byte-span conversions. Test-only; owned by the record work.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::protocol::test {

inline std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Text-like data that every codec shrinks substantially.
inline std::vector<uint8_t> compressible_bytes(size_t n, uint32_t seed) {
  static constexpr std::string_view kWords[] = {"strata ", "kafka ",     "record ", "batch ",
                                                "offset ", "partition ", "12345 ",  "\n"};
  std::mt19937 rng(seed);
  std::vector<uint8_t> v;
  v.reserve(n);
  while (v.size() < n) {
    std::string_view w = kWords[rng() % 8];
    for (char c : w) {
      if (v.size() == n) break;
      v.push_back(static_cast<uint8_t>(c));
    }
  }
  return v;
}

inline std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

inline std::string as_string(std::span<const uint8_t> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

inline std::optional<std::string> as_opt_string(const std::optional<std::span<const uint8_t>>& b) {
  if (!b) return std::nullopt;
  return as_string(*b);
}

}  // namespace strata::protocol::test
