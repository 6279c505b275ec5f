// Encoded-size helpers for Kafka wire primitives, used by generated size() functions.
// Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace strata::protocol::wire_size {

constexpr size_t uvarint(uint32_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
constexpr size_t uvarlong(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
constexpr size_t varint(int32_t v) {
  return uvarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}
constexpr size_t varlong(int64_t v) {
  return uvarlong((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
// Length prefix of a string/bytes/array of `n` elements (n < 0 = null).
constexpr size_t compact_length(int64_t n) { return uvarint(static_cast<uint32_t>(n + 1)); }

inline size_t string(const std::string& s, bool compact) {
  return compact ? compact_length(static_cast<int64_t>(s.size())) + s.size() : 2 + s.size();
}
inline size_t nullable_string(const std::optional<std::string>& s, bool compact) {
  if (!s) return compact ? 1 : 2;
  return string(*s, compact);
}
inline size_t bytes(std::span<const uint8_t> b, bool compact) {
  return compact ? compact_length(static_cast<int64_t>(b.size())) + b.size() : 4 + b.size();
}
inline size_t nullable_bytes(const std::optional<std::span<const uint8_t>>& b, bool compact) {
  if (!b) return compact ? 1 : 4;
  return bytes(*b, compact);
}
inline size_t array_length(int64_t n, bool compact) { return compact ? compact_length(n) : 4; }

}  // namespace strata::protocol::wire_size
