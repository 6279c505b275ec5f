// Big-endian load/store of fixed-width integers at arbitrary (unaligned) addresses, as used by
// the RecordBatch v2 header. Local to protocol/record/ so it does not depend on protocol/wire/.
// Owned by the record work; pure functions, any thread.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace strata::protocol::detail {

template <typename T>
inline T load_be(const uint8_t* p) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  U v;
  std::memcpy(&v, p, sizeof(U));
  if constexpr (std::endian::native == std::endian::little && sizeof(U) > 1) {
    v = static_cast<U>(__builtin_bswap64(static_cast<uint64_t>(v)) >> (64 - 8 * sizeof(U)));
  }
  return static_cast<T>(v);
}

template <typename T>
inline void store_be(uint8_t* p, T value) {
  static_assert(std::is_integral_v<T>);
  using U = std::make_unsigned_t<T>;
  U v = static_cast<U>(value);
  if constexpr (std::endian::native == std::endian::little && sizeof(U) > 1) {
    v = static_cast<U>(__builtin_bswap64(static_cast<uint64_t>(v)) >> (64 - 8 * sizeof(U)));
  }
  std::memcpy(p, &v, sizeof(U));
}

}  // namespace strata::protocol::detail
