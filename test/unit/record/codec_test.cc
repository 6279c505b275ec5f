// Unit tests for protocol/codec: round trips, decompression-bomb limit, corrupt input, and the
// exact container formats other Kafka clients expect (xerial snappy, independent-block LZ4 frames,
// gzip members, zstd frames without a content size).
#include <gtest/gtest.h>
#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <string>
#include <tuple>

#include "protocol/codec/compression.h"
#include "test/unit/record/test_util.h"

namespace strata::codec {
namespace {

using protocol::test::compressible_bytes;
using protocol::test::random_bytes;

constexpr Compression kAllCodecs[] = {Compression::none, Compression::gzip, Compression::snappy,
                                      Compression::lz4, Compression::zstd};
constexpr Compression kRealCodecs[] = {Compression::gzip, Compression::snappy, Compression::lz4,
                                       Compression::zstd};
constexpr size_t kNoLimit = SIZE_MAX;

std::vector<uint8_t> must_compress(Compression c, std::span<const uint8_t> in) {
  std::vector<uint8_t> out;
  Status st = compress(c, in, out);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return out;
}

class CodecRoundTrip : public ::testing::TestWithParam<std::tuple<Compression, size_t, bool>> {};

TEST_P(CodecRoundTrip, DecompressRestoresInput) {
  auto [codec, size, compressible] = GetParam();
  auto input = compressible ? compressible_bytes(size, 7) : random_bytes(size, 11);
  auto compressed = must_compress(codec, input);
  if (compressible && size >= 65536 && codec != Compression::none) {
    EXPECT_LT(compressed.size(), input.size() / 2) << compression_name(codec);
  }
  std::vector<uint8_t> out;
  Status st = decompress(codec, compressed, out, kNoLimit);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(out, input);

  // Exact-size limit is fine; one byte less is a bomb.
  out.clear();
  EXPECT_TRUE(decompress(codec, compressed, out, size).ok());
  if (size > 0) {
    out.clear();
    EXPECT_EQ(decompress(codec, compressed, out, size - 1).code(), Errc::too_large);
  }
}

INSTANTIATE_TEST_SUITE_P(AllCodecsAndSizes, CodecRoundTrip,
                         ::testing::Combine(::testing::ValuesIn(kAllCodecs),
                                            ::testing::Values(size_t{0}, size_t{1}, size_t{65536},
                                                              size_t{1} << 20),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(compression_name(std::get<0>(info.param))) + "_" +
                                  std::to_string(std::get<1>(info.param)) +
                                  (std::get<2>(info.param) ? "_compressible" : "_random");
                         });

TEST(Codec, CompressAndDecompressAppend) {
  auto input = compressible_bytes(1000, 1);
  for (Compression c : kAllCodecs) {
    std::vector<uint8_t> compressed = {9, 9, 9};
    ASSERT_TRUE(compress(c, input, compressed).ok());
    ASSERT_EQ(compressed[0], 9);
    std::vector<uint8_t> out = {1, 2};
    ASSERT_TRUE(decompress(c, std::span(compressed).subspan(3), out, input.size()).ok())
        << compression_name(c);
    ASSERT_EQ(out.size(), input.size() + 2);
    EXPECT_EQ(out[0], 1);
    EXPECT_EQ(out[1], 2);
    EXPECT_TRUE(std::equal(input.begin(), input.end(), out.begin() + 2));
  }
}

TEST(Codec, DecompressionBombIsRefused) {
  std::vector<uint8_t> zeros(64 << 20, 0);  // 64 MiB of zeros compresses to a few KiB
  for (Compression c : kRealCodecs) {
    auto compressed = must_compress(c, zeros);
    ASSERT_LT(compressed.size(), size_t{4} << 20) << compression_name(c);
    std::vector<uint8_t> out;
    Status st = decompress(c, compressed, out, 1 << 20);
    EXPECT_EQ(st.code(), Errc::too_large) << compression_name(c);
    EXPECT_LE(out.size(), size_t{1} << 20) << compression_name(c);
  }
}

TEST(Codec, GarbageInputIsAnErrorNotACrash) {
  for (Compression c : kRealCodecs) {
    for (uint32_t seed = 0; seed < 50; ++seed) {
      auto garbage = random_bytes(1 + seed * 37, seed);
      std::vector<uint8_t> out;
      EXPECT_FALSE(decompress(c, garbage, out, 1 << 20).ok()) << compression_name(c) << seed;
    }
  }
}

TEST(Codec, EmptyInputIsNotAValidStream) {
  for (Compression c : kRealCodecs) {
    std::vector<uint8_t> out;
    EXPECT_EQ(decompress(c, {}, out, 100).code(), Errc::corruption) << compression_name(c);
  }
}

TEST(Codec, TruncatedInputIsAnError) {
  auto input = random_bytes(10000, 3);
  for (Compression c : kRealCodecs) {
    auto compressed = must_compress(c, input);
    // Every cut that drops at least the trailer/end mark must fail. (A xerial stream cut exactly
    // at a chunk boundary is a valid shorter stream, but this input is one chunk.)
    for (size_t keep : {size_t{1}, size_t{10}, compressed.size() / 2, compressed.size() - 1}) {
      std::vector<uint8_t> out;
      Status st = decompress(c, std::span(compressed).first(keep), out, kNoLimit);
      EXPECT_EQ(st.code(), Errc::corruption) << compression_name(c) << " keep=" << keep;
    }
  }
}

TEST(Codec, FlippedBytesNeverCrash) {
  auto input = compressible_bytes(5000, 4);
  for (Compression c : kRealCodecs) {
    auto compressed = must_compress(c, input);
    for (size_t i = 0; i < compressed.size(); ++i) {
      auto bad = compressed;
      bad[i] ^= 0x5A;
      std::vector<uint8_t> out;
      Status st = decompress(c, bad, out, 1 << 20);
      if (st.ok()) {
        EXPECT_LE(out.size(), size_t{1} << 20);
      }
    }
  }
}

TEST(Codec, UnknownCodecIsUnsupported) {
  std::vector<uint8_t> out;
  auto bogus = static_cast<Compression>(5);
  EXPECT_EQ(compress(bogus, {}, out).code(), Errc::unsupported);
  EXPECT_EQ(decompress(bogus, {}, out, 10).code(), Errc::unsupported);
  EXPECT_FALSE(is_known_compression(5));
  EXPECT_FALSE(is_known_compression(-1));
  EXPECT_TRUE(is_known_compression(4));
}

// --- gzip ------------------------------------------------------------------------------------

TEST(Gzip, WritesGzipContainer) {
  auto out = must_compress(Compression::gzip, compressible_bytes(100, 1));
  ASSERT_GE(out.size(), 18u);
  EXPECT_EQ(out[0], 0x1f);
  EXPECT_EQ(out[1], 0x8b);
  EXPECT_EQ(out[2], 8);  // deflate
}

TEST(Gzip, ReadsConcatenatedMembers) {
  auto a = compressible_bytes(3000, 1);
  auto b = random_bytes(2000, 2);
  auto stream = must_compress(Compression::gzip, a);
  auto second = must_compress(Compression::gzip, b);
  stream.insert(stream.end(), second.begin(), second.end());
  std::vector<uint8_t> out;
  ASSERT_TRUE(decompress(Compression::gzip, stream, out, kNoLimit).ok());
  auto expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(out, expected);
}

// --- snappy ----------------------------------------------------------------------------------

std::vector<uint8_t> raw_snappy(std::span<const uint8_t> in) {
  std::string s;
  snappy::Compress(reinterpret_cast<const char*>(in.data()), in.size(), &s);
  return {s.begin(), s.end()};
}

void append_be32(std::vector<uint8_t>& v, uint32_t x) {
  for (int shift = 24; shift >= 0; shift -= 8) v.push_back(static_cast<uint8_t>(x >> shift));
}

TEST(Snappy, ReadsHandMadeXerialFraming) {
  auto part1 = compressible_bytes(5000, 1);
  auto part2 = random_bytes(700, 2);
  std::vector<uint8_t> framed = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
  append_be32(framed, 1);  // version
  append_be32(framed, 1);  // compatible version
  for (const auto* part : {&part1, &part2}) {
    auto block = raw_snappy(*part);
    append_be32(framed, static_cast<uint32_t>(block.size()));
    framed.insert(framed.end(), block.begin(), block.end());
  }
  std::vector<uint8_t> out;
  Status st = decompress(Compression::snappy, framed, out, kNoLimit);
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto expected = part1;
  expected.insert(expected.end(), part2.begin(), part2.end());
  EXPECT_EQ(out, expected);

  // A chunk length pointing past the end is corruption.
  framed[16 + 3] += 1;
  out.clear();
  EXPECT_FALSE(decompress(Compression::snappy, framed, out, kNoLimit).ok());
}

TEST(Snappy, ReadsRawSnappy) {
  auto input = compressible_bytes(100000, 5);
  auto raw = raw_snappy(input);
  std::vector<uint8_t> out;
  ASSERT_TRUE(decompress(Compression::snappy, raw, out, kNoLimit).ok());
  EXPECT_EQ(out, input);
  out.clear();
  EXPECT_EQ(decompress(Compression::snappy, raw, out, 99999).code(), Errc::too_large);
}

TEST(Snappy, WritesXerialFramingIn32KiBChunks) {
  auto input = random_bytes(100000, 6);
  auto out = must_compress(Compression::snappy, input);
  const uint8_t magic[] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
  ASSERT_GE(out.size(), sizeof(magic));
  EXPECT_TRUE(std::equal(std::begin(magic), std::end(magic), out.begin()));
  // Walk the chunks by hand and decode each with libsnappy directly.
  std::vector<uint8_t> decoded;
  size_t pos = 16, chunks = 0;
  while (pos < out.size()) {
    ASSERT_LE(pos + 4, out.size());
    uint32_t len = (uint32_t{out[pos]} << 24) | (uint32_t{out[pos + 1]} << 16) |
                   (uint32_t{out[pos + 2]} << 8) | out[pos + 3];
    pos += 4;
    ASSERT_LE(pos + len, out.size());
    std::string block;
    ASSERT_TRUE(snappy::Uncompress(reinterpret_cast<const char*>(out.data() + pos), len, &block));
    EXPECT_LE(block.size(), 32u * 1024);
    decoded.insert(decoded.end(), block.begin(), block.end());
    pos += len;
    ++chunks;
  }
  EXPECT_EQ(chunks, 4u);  // 100000 bytes / 32 KiB
  EXPECT_EQ(decoded, input);
}

// --- lz4 -------------------------------------------------------------------------------------

TEST(Lz4, WritesIndependentBlocksWithoutContentChecksum) {
  auto out = must_compress(Compression::lz4, compressible_bytes(300000, 1));
  ASSERT_GE(out.size(), 7u);
  EXPECT_EQ(out[0], 0x04);  // magic 0x184D2204, little-endian
  EXPECT_EQ(out[1], 0x22);
  EXPECT_EQ(out[2], 0x4D);
  EXPECT_EQ(out[3], 0x18);
  uint8_t flg = out[4];
  EXPECT_EQ(flg >> 6, 1) << "frame version 01";
  EXPECT_TRUE(flg & 0x20) << "block independence flag must be set (Java rejects linked blocks)";
  EXPECT_FALSE(flg & 0x10) << "no block checksums";
  EXPECT_FALSE(flg & 0x08) << "no content size";
  EXPECT_FALSE(flg & 0x04) << "no content checksum";
  EXPECT_EQ((out[5] >> 4) & 0x7, 4) << "64 KiB maximum block size";
}

std::vector<uint8_t> lz4_frame_with(std::span<const uint8_t> in, LZ4F_blockMode_t mode,
                                    bool checksums) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockMode = mode;
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.contentSize = in.size();
  if (checksums) {
    prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
    prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
  }
  std::vector<uint8_t> out(LZ4F_compressFrameBound(in.size(), &prefs));
  size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
  EXPECT_FALSE(LZ4F_isError(n));
  out.resize(n);
  return out;
}

TEST(Lz4, ReadsLinkedBlocksChecksumsAndConcatenatedFrames) {
  auto a = compressible_bytes(1 << 20, 2);
  auto b = random_bytes(100000, 3);
  auto stream = lz4_frame_with(a, LZ4F_blockLinked, true);
  ASSERT_FALSE(stream[4] & 0x20);
  auto second = lz4_frame_with(b, LZ4F_blockIndependent, false);
  stream.insert(stream.end(), second.begin(), second.end());
  std::vector<uint8_t> out;
  Status st = decompress(Compression::lz4, stream, out, kNoLimit);
  ASSERT_TRUE(st.ok()) << st.to_string();
  auto expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(out, expected);
}

TEST(Lz4, ContentChecksumMismatchIsCorruption) {
  auto in = compressible_bytes(10000, 2);
  auto frame = lz4_frame_with(in, LZ4F_blockIndependent, true);
  frame[frame.size() - 1] ^= 1;  // last byte of the content checksum
  std::vector<uint8_t> out;
  EXPECT_EQ(decompress(Compression::lz4, frame, out, kNoLimit).code(), Errc::corruption);
}

// --- zstd ------------------------------------------------------------------------------------

TEST(Zstd, ReadsFramesWithoutContentSize) {
  auto input = compressible_bytes(2 << 20, 8);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
  std::vector<uint8_t> frame(ZSTD_compressBound(input.size()));
  size_t n = ZSTD_compress2(cctx, frame.data(), frame.size(), input.data(), input.size());
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  frame.resize(n);
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  std::vector<uint8_t> out;
  ASSERT_TRUE(decompress(Compression::zstd, frame, out, kNoLimit).ok());
  EXPECT_EQ(out, input);
  out.clear();
  EXPECT_EQ(decompress(Compression::zstd, frame, out, 1 << 20).code(), Errc::too_large);
}

TEST(Zstd, ReadsConcatenatedFrames) {
  auto a = compressible_bytes(5000, 1);
  auto b = compressible_bytes(7000, 2);
  auto stream = must_compress(Compression::zstd, a);
  auto second = must_compress(Compression::zstd, b);
  stream.insert(stream.end(), second.begin(), second.end());
  std::vector<uint8_t> out;
  ASSERT_TRUE(decompress(Compression::zstd, stream, out, kNoLimit).ok());
  auto expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(out, expected);
}

}  // namespace
}  // namespace strata::codec
