#include "protocol/pk/partitioner.h"

#include <zlib.h>

namespace strata::protocol::pk {

int32_t murmur2(std::span<const uint8_t> data) {
  // Unsigned arithmetic gives Java's wrapping int semantics; >>> is a logical shift.
  const uint32_t length = static_cast<uint32_t>(data.size());
  const uint32_t m = 0x5bd1e995;
  const int r = 24;
  uint32_t h = 0x9747b28c ^ length;
  const uint32_t length4 = length / 4;
  for (uint32_t i = 0; i < length4; ++i) {
    const uint32_t i4 = i * 4;
    uint32_t k = static_cast<uint32_t>(data[i4]) | (static_cast<uint32_t>(data[i4 + 1]) << 8) |
                 (static_cast<uint32_t>(data[i4 + 2]) << 16) |
                 (static_cast<uint32_t>(data[i4 + 3]) << 24);
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const uint32_t tail = length & ~3u;
  switch (length % 4) {
    case 3:
      h ^= static_cast<uint32_t>(data[tail + 2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(data[tail + 1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= static_cast<uint32_t>(data[tail]);
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

uint32_t crc32_of(std::span<const uint8_t> key) {
  uLong c = crc32(0L, Z_NULL, 0);
  return static_cast<uint32_t>(crc32(c, key.data(), static_cast<uInt>(key.size())));
}

int32_t partition_for_key(Partitioner p, std::span<const uint8_t> key, int32_t n) {
  if (n <= 1) return 0;
  if (p == Partitioner::crc32)
    return static_cast<int32_t>(crc32_of(key) % static_cast<uint32_t>(n));
  return (murmur2(key) & 0x7fffffff) % n;
}

}  // namespace strata::protocol::pk
