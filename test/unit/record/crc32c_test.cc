// Unit tests for protocol/record/crc32c: standard vectors, extension, and hardware == software
// on random data of many lengths and alignments.
#include "protocol/record/crc32c.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

#include "test/unit/record/test_util.h"

namespace strata::protocol {
namespace {

using test::as_bytes;
using test::random_bytes;

// Bit-at-a-time reference straight from the definition.
uint32_t reference_crc32c(std::span<const uint8_t> data, uint32_t crc = 0) {
  uint32_t s = ~crc;
  for (uint8_t b : data) {
    s ^= b;
    for (int k = 0; k < 8; ++k) s = (s & 1) ? (s >> 1) ^ 0x82F63B78u : s >> 1;
  }
  return ~s;
}

TEST(Crc32c, StandardVectors) {
  EXPECT_EQ(crc32c(as_bytes("123456789")), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  EXPECT_EQ(crc32c(as_bytes("a")), 0xC1D04330u);
  // RFC 3720 (iSCSI) B.4 test vectors.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(inc), 0x46DD794Eu);
  EXPECT_EQ(crc32c(dec), 0x113FDB5Cu);
}

TEST(Crc32c, SoftwareMatchesVectorsAndReference) {
  EXPECT_EQ(detail::crc32c_software(as_bytes("123456789")), 0xE3069283u);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 1000, 4097}) {
    auto data = random_bytes(n, static_cast<uint32_t>(n));
    EXPECT_EQ(detail::crc32c_software(data), reference_crc32c(data)) << n;
    EXPECT_EQ(detail::crc32c_software(data, 0x12345678u), reference_crc32c(data, 0x12345678u));
  }
}

TEST(Crc32c, ExtendsLikeConcatenation) {
  auto data = random_bytes(100000, 42);
  uint32_t whole = crc32c(data);
  EXPECT_EQ(whole, reference_crc32c(data));
  for (size_t cut :
       {size_t{0}, size_t{1}, size_t{13}, size_t{768}, size_t{12288}, size_t{50001}, data.size()}) {
    std::span<const uint8_t> s(data);
    EXPECT_EQ(crc32c(s.subspan(cut), crc32c(s.first(cut))), whole) << cut;
  }
}

TEST(Crc32c, HardwareMatchesSoftwareOnManyLengthsAndAlignments) {
  if (!detail::crc32c_hardware_available()) GTEST_SKIP() << "no hardware CRC-32C on this CPU";
  auto data = random_bytes((3 << 14) + 64, 7);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  // Around the three-way block boundaries (3*256 and 3*4096) and beyond.
  for (size_t base : {size_t{768}, size_t{1536}, size_t{12288}, size_t{24576}, size_t{3 << 14}}) {
    for (size_t d = 0; d < 18; ++d) {
      lengths.push_back(base + d);
      lengths.push_back(base - 1 - d);
    }
  }
  for (size_t align = 0; align < 16; ++align) {
    for (size_t n : lengths) {
      if (align + n > data.size()) continue;
      std::span<const uint8_t> s(data.data() + align, n);
      uint32_t seed = static_cast<uint32_t>(n * 2654435761u);
      ASSERT_EQ(detail::crc32c_hardware(s), detail::crc32c_software(s)) << n << "@" << align;
      ASSERT_EQ(detail::crc32c_hardware(s, seed), detail::crc32c_software(s, seed));
    }
  }
  EXPECT_EQ(detail::crc32c_hardware(as_bytes("123456789")), 0xE3069283u);
}

}  // namespace
}  // namespace strata::protocol
