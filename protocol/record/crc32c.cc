// CRC-32C implementations (see crc32c.h).
//
// All paths work on the raw CRC register s = ~crc (reflected bit order), which is linear:
//   raw(s, A ++ B) = shift(raw(s, A), |B|) ^ raw(0, B),  shift(x, n) = x * x^(8n) mod P.
// The x86 path uses that identity to run three independent `crc32` instruction streams over
// three adjacent blocks (the instruction has 3-cycle latency but 1-cycle throughput), then folds
// them together with table-driven shifts computed at compile time.
#include "protocol/record/crc32c.h"

#include <array>
#include <bit>
#include <cstddef>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define STRATA_CRC32C_X86 1
#elif defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>
#define STRATA_CRC32C_ARM 1
#endif

namespace strata::protocol {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // Castagnoli, reflected

// --- GF(2) polynomial arithmetic modulo P, reflected (bit 31 = x^0) ------------------------

constexpr uint32_t multmodp(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;  // b *= x
  }
  return product;
}

// x^(8 * nbytes) mod P: the operator that appends `nbytes` zero bytes to a raw register.
constexpr uint32_t x8n_mod_p(uint64_t nbytes) {
  uint32_t result = 1u << 31;       // x^0
  uint32_t power = 1u << (31 - 8);  // x^8
  for (uint64_t e = nbytes; e != 0; e >>= 1) {
    if (e & 1) result = multmodp(power, result);
    power = multmodp(power, power);
  }
  return result;
}

using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

// Table form of x -> multmodp(x8n_mod_p(nbytes), x), one lookup per byte of x.
constexpr ShiftTable make_shift_table(uint64_t nbytes) {
  ShiftTable t{};
  uint32_t k = x8n_mod_p(nbytes);
  for (int j = 0; j < 4; ++j) {
    for (uint32_t b = 0; b < 256; ++b) t[j][b] = multmodp(k, b << (8 * j));
  }
  return t;
}

[[maybe_unused]] inline uint32_t shift(const ShiftTable& t, uint32_t x) {
  return t[0][x & 0xff] ^ t[1][(x >> 8) & 0xff] ^ t[2][(x >> 16) & 0xff] ^ t[3][x >> 24];
}

// --- software: slicing-by-8 ---------------------------------------------------------------

using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SliceTables make_slice_tables() {
  SliceTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xff];
  }
  return t;
}

constexpr SliceTables kSlice = make_slice_tables();

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

#if STRATA_CRC32C_X86
constexpr size_t kLongBlock = 4096;  // per stream; 12 KiB per three-way step
constexpr size_t kShortBlock = 256;  // per stream; 768 B per three-way step
constexpr ShiftTable kShiftLong = make_shift_table(kLongBlock);
constexpr ShiftTable kShiftShort = make_shift_table(kShortBlock);

// Three interleaved streams over [p, p+3L): returns the raw register after all 3L bytes.
template <size_t L>
__attribute__((target("sse4.2"))) inline uint32_t x86_three_way(const uint8_t* p, uint32_t s,
                                                                const ShiftTable& t) {
  uint64_t a = s, b = 0, c = 0;
  for (size_t i = 0; i < L; i += 8) {
    uint64_t wa, wb, wc;
    std::memcpy(&wa, p + i, 8);
    std::memcpy(&wb, p + L + i, 8);
    std::memcpy(&wc, p + 2 * L + i, 8);
    a = _mm_crc32_u64(a, wa);
    b = _mm_crc32_u64(b, wb);
    c = _mm_crc32_u64(c, wc);
  }
  uint32_t ab = shift(t, static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b);
  return shift(t, ab) ^ static_cast<uint32_t>(c);
}
#endif

}  // namespace

namespace detail {

uint32_t crc32c_software(std::span<const uint8_t> data, uint32_t crc) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  uint32_t s = ~crc;
  while (n >= 8) {
    uint64_t w = load_le64(p) ^ s;
    s = kSlice[7][w & 0xff] ^ kSlice[6][(w >> 8) & 0xff] ^ kSlice[5][(w >> 16) & 0xff] ^
        kSlice[4][(w >> 24) & 0xff] ^ kSlice[3][(w >> 32) & 0xff] ^ kSlice[2][(w >> 40) & 0xff] ^
        kSlice[1][(w >> 48) & 0xff] ^ kSlice[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) s = (s >> 8) ^ kSlice[0][(s ^ *p++) & 0xff];
  return ~s;
}

#if STRATA_CRC32C_X86

bool crc32c_hardware_available() { return __builtin_cpu_supports("sse4.2"); }

__attribute__((target("sse4.2"))) uint32_t crc32c_hardware(std::span<const uint8_t> data,
                                                           uint32_t crc) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  uint32_t s = ~crc;
  while (n >= 3 * kLongBlock) {
    s = x86_three_way<kLongBlock>(p, s, kShiftLong);
    p += 3 * kLongBlock;
    n -= 3 * kLongBlock;
  }
  while (n >= 3 * kShortBlock) {
    s = x86_three_way<kShortBlock>(p, s, kShiftShort);
    p += 3 * kShortBlock;
    n -= 3 * kShortBlock;
  }
  uint64_t s64 = s;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    s64 = _mm_crc32_u64(s64, w);
    p += 8;
    n -= 8;
  }
  s = static_cast<uint32_t>(s64);
  while (n--) s = _mm_crc32_u8(s, *p++);
  return ~s;
}

#elif STRATA_CRC32C_ARM

bool crc32c_hardware_available() { return true; }

uint32_t crc32c_hardware(std::span<const uint8_t> data, uint32_t crc) {
  const uint8_t* p = data.data();
  size_t n = data.size();
  uint32_t s = ~crc;
  while (n >= 8) {
    s = __crc32cd(s, load_le64(p));
    p += 8;
    n -= 8;
  }
  while (n--) s = __crc32cb(s, *p++);
  return ~s;
}

#else

bool crc32c_hardware_available() { return false; }

uint32_t crc32c_hardware(std::span<const uint8_t> data, uint32_t crc) {
  return crc32c_software(data, crc);
}

#endif

}  // namespace detail

uint32_t crc32c(std::span<const uint8_t> data, uint32_t crc) {
  using Fn = uint32_t (*)(std::span<const uint8_t>, uint32_t);
  static const Fn impl =
      detail::crc32c_hardware_available() ? &detail::crc32c_hardware : &detail::crc32c_software;
  return impl(data, crc);
}

}  // namespace strata::protocol
