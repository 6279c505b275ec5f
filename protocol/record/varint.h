// Zig-zag LEB128 varint (int32, <= 5 bytes) and varlong (int64, <= 10 bytes) as used inside
// RecordBatch v2 records. Local to protocol/record/ (protocol/wire/ has its own for messages).
// Decoding rejects truncated and over-long encodings, including a last byte carrying bits beyond
// the type's width. Owned by the record work; pure functions, any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace strata::protocol::detail {

inline constexpr size_t kMaxVarintBytes = 5;
inline constexpr size_t kMaxVarlongBytes = 10;

// Reads a varint at in[pos]; advances pos and returns true on success. On failure pos is
// unspecified.
inline bool read_varint(std::span<const uint8_t> in, size_t& pos, int32_t& out) {
  uint32_t raw = 0;
  for (size_t i = 0; i < kMaxVarintBytes; ++i) {
    if (pos >= in.size()) return false;
    uint8_t b = in[pos++];
    if (i == kMaxVarintBytes - 1 && (b & 0xF0) != 0) return false;  // > 32 bits or > 5 bytes
    raw |= static_cast<uint32_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) {
      out = static_cast<int32_t>((raw >> 1) ^ (~(raw & 1) + 1));
      return true;
    }
  }
  return false;
}

inline bool read_varlong(std::span<const uint8_t> in, size_t& pos, int64_t& out) {
  uint64_t raw = 0;
  for (size_t i = 0; i < kMaxVarlongBytes; ++i) {
    if (pos >= in.size()) return false;
    uint8_t b = in[pos++];
    if (i == kMaxVarlongBytes - 1 && (b & 0xFE) != 0) return false;  // > 64 bits or > 10 bytes
    raw |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
    if ((b & 0x80) == 0) {
      out = static_cast<int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
      return true;
    }
  }
  return false;
}

inline constexpr uint32_t zigzag32(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
inline constexpr uint64_t zigzag64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

inline constexpr size_t unsigned_varint_size(uint64_t u) {
  size_t n = 1;
  while (u >= 0x80) {
    u >>= 7;
    ++n;
  }
  return n;
}
inline constexpr size_t varint_size(int32_t v) { return unsigned_varint_size(zigzag32(v)); }
inline constexpr size_t varlong_size(int64_t v) { return unsigned_varint_size(zigzag64(v)); }

// Writes at p (which must have room for varint_size/varlong_size bytes); returns the end.
inline uint8_t* write_unsigned_varint(uint8_t* p, uint64_t u) {
  while (u >= 0x80) {
    *p++ = static_cast<uint8_t>(u | 0x80);
    u >>= 7;
  }
  *p++ = static_cast<uint8_t>(u);
  return p;
}
inline uint8_t* write_varint(uint8_t* p, int32_t v) {
  return write_unsigned_varint(p, zigzag32(v));
}
inline uint8_t* write_varlong(uint8_t* p, int64_t v) {
  return write_unsigned_varint(p, zigzag64(v));
}

}  // namespace strata::protocol::detail
