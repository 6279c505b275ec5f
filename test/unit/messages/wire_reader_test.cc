// Unit tests for protocol/wire/reader.h: primitives, varints, strings, bytes, arrays, tags,
// and malformed/hostile input.
#include <gtest/gtest.h>

#include <vector>

#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace strata::protocol {
namespace {

Reader reader_of(const std::vector<uint8_t>& b) { return Reader(b.data(), b.size()); }

TEST(Reader, FixedWidthBigEndian) {
  std::vector<uint8_t> b = {0xff, 0x01, 0x02, 0x80, 0x00, 0x00, 0x01, 0x00, 0x00,
                            0x00, 0x00, 0x00, 0x00, 0x00, 0x2a, 0xff, 0xfe, 0x01};
  Reader r = reader_of(b);
  EXPECT_EQ(r.read_int8(), -1);
  EXPECT_EQ(r.read_int16(), 0x0102);
  EXPECT_EQ(r.read_int32(), static_cast<int32_t>(0x80000001));
  EXPECT_EQ(r.read_int64(), 42);
  EXPECT_EQ(r.read_uint16(), 0xfffe);
  EXPECT_TRUE(r.read_bool());
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(r.position(), b.size());
  EXPECT_THROW(r.read_int8(), DecodeError);
}

TEST(Reader, Float64) {
  Writer w;
  w.write_float64(-2.25);
  Reader r(w.buffer().data(), w.size());
  EXPECT_EQ(w.buffer()[0], 0xc0);
  EXPECT_DOUBLE_EQ(r.read_float64(), -2.25);
}

TEST(Reader, UnsignedVarint) {
  std::vector<uint8_t> b = {0x00, 0x7f, 0x80, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f};
  Reader r = reader_of(b);
  EXPECT_EQ(r.read_uvarint(), 0u);
  EXPECT_EQ(r.read_uvarint(), 127u);
  EXPECT_EQ(r.read_uvarint(), 128u);
  EXPECT_EQ(r.read_uvarint(), 0xffffffffu);
}

TEST(Reader, VarintTooLongOrOverflowingThrows) {
  std::vector<uint8_t> too_long = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  Reader r1 = reader_of(too_long);
  EXPECT_THROW(r1.read_uvarint(), DecodeError);
  std::vector<uint8_t> overflow = {0xff, 0xff, 0xff, 0xff, 0x1f};
  Reader r2 = reader_of(overflow);
  EXPECT_THROW(r2.read_uvarint(), DecodeError);
  std::vector<uint8_t> truncated = {0x80, 0x80};
  Reader r3 = reader_of(truncated);
  EXPECT_THROW(r3.read_uvarint(), DecodeError);
  std::vector<uint8_t> long_varlong(11, 0x80);
  Reader r4 = reader_of(long_varlong);
  EXPECT_THROW(r4.read_varlong(), DecodeError);
}

TEST(Reader, ZigZag) {
  std::vector<uint8_t> b = {0x00, 0x01, 0x02, 0x03, 0xfe, 0xff, 0xff, 0xff, 0x0f};
  Reader r = reader_of(b);
  EXPECT_EQ(r.read_varint(), 0);
  EXPECT_EQ(r.read_varint(), -1);
  EXPECT_EQ(r.read_varint(), 1);
  EXPECT_EQ(r.read_varint(), -2);
  EXPECT_EQ(r.read_varint(), 2147483647);
  Writer w;
  w.write_varlong(INT64_MIN);
  w.write_varlong(INT64_MAX);
  w.write_varint(INT32_MIN);
  Reader r2(w.buffer().data(), w.size());
  EXPECT_EQ(r2.read_varlong(), INT64_MIN);
  EXPECT_EQ(r2.read_varlong(), INT64_MAX);
  EXPECT_EQ(r2.read_varint(), INT32_MIN);
  EXPECT_EQ(r2.remaining(), 0u);
}

TEST(Reader, Strings) {
  std::vector<uint8_t> b = {0x00, 0x02, 'h', 'i', 0xff, 0xff, 0x00,
                            0x00, 0x03, 'a', 'b', 0x00, 0x01};
  Reader r = reader_of(b);
  EXPECT_EQ(r.read_string(), "hi");
  EXPECT_EQ(r.read_nullable_string(), std::nullopt);
  EXPECT_EQ(r.read_nullable_string(), std::optional<std::string>(""));
  EXPECT_EQ(r.read_compact_string(), "ab");
  EXPECT_EQ(r.read_compact_nullable_string(), std::nullopt);
  EXPECT_EQ(r.read_compact_nullable_string(), std::optional<std::string>(""));
}

TEST(Reader, CompactNullableStringNullVersusEmpty) {
  std::vector<uint8_t> null_form = {0x00};
  std::vector<uint8_t> empty_form = {0x01};
  Reader a = reader_of(null_form);
  Reader b = reader_of(empty_form);
  EXPECT_FALSE(a.read_compact_nullable_string().has_value());
  auto e = b.read_compact_nullable_string();
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->empty());
  // A non-nullable compact string refuses the null form.
  Reader c = reader_of(null_form);
  EXPECT_THROW(c.read_compact_string(), DecodeError);
  Writer w;
  w.write_compact_nullable_string(std::nullopt);
  w.write_compact_nullable_string(std::string());
  EXPECT_EQ(w.buffer(), (std::vector<uint8_t>{0x00, 0x01}));
}

TEST(Reader, NonNullableStringRejectsNull) {
  std::vector<uint8_t> b = {0xff, 0xff};
  Reader r = reader_of(b);
  EXPECT_THROW(r.read_string(), DecodeError);
}

TEST(Reader, StringLengthBeyondInputThrows) {
  std::vector<uint8_t> b = {0x7f, 0xff, 'x'};
  Reader r = reader_of(b);
  EXPECT_THROW(r.read_string(), DecodeError);
  std::vector<uint8_t> c = {0x10, 'x'};
  Reader r2 = reader_of(c);
  EXPECT_THROW(r2.read_compact_string(), DecodeError);
}

TEST(Reader, BytesAreViewsIntoTheBuffer) {
  std::vector<uint8_t> b = {0x00, 0x00, 0x00, 0x03, 1, 2, 3, 0x03, 9, 8, 0xff, 0xff, 0xff, 0xff};
  Reader r = reader_of(b);
  auto x = r.read_bytes();
  EXPECT_EQ(x.data(), b.data() + 4);
  EXPECT_EQ(x.size(), 3u);
  auto y = r.read_compact_bytes();
  EXPECT_EQ(y.data(), b.data() + 8);
  EXPECT_EQ(y.size(), 2u);
  EXPECT_FALSE(r.read_nullable_bytes().has_value());
}

TEST(Reader, RecordsFieldIsOneInMemoryPart) {
  std::vector<uint8_t> b = {0x00, 0x00, 0x00, 0x02, 0xaa, 0xbb, 0x00};
  Reader r = reader_of(b);
  Records rec = r.read_records(false);
  EXPECT_FALSE(rec.is_null);
  ASSERT_EQ(rec.parts.size(), 1u);
  EXPECT_EQ(rec.parts[0].data, b.data() + 4);
  EXPECT_EQ(rec.size(), 2u);
  Records null_rec = r.read_records(true);
  EXPECT_TRUE(null_rec.is_null);
}

TEST(Reader, HostileLengthsThrowWithoutAllocating) {
  // 2^31-1 bytes / elements claimed in a 6-byte input.
  std::vector<uint8_t> b = {0x7f, 0xff, 0xff, 0xff, 0x00, 0x00};
  Reader r1 = reader_of(b);
  EXPECT_THROW(r1.read_bytes(), DecodeError);
  Reader r2 = reader_of(b);
  EXPECT_THROW(r2.read_array_length(), DecodeError);
  std::vector<uint8_t> c = {0xff, 0xff, 0xff, 0xff, 0x07};  // compact length 2^31-1
  Reader r3 = reader_of(c);
  EXPECT_THROW(r3.read_compact_array_length(), DecodeError);
  Reader r4 = reader_of(c);
  EXPECT_THROW(r4.read_compact_bytes(), DecodeError);
  std::vector<uint8_t> neg = {0x80, 0x00, 0x00, 0x00};
  Reader r5 = reader_of(neg);
  EXPECT_THROW(r5.read_array_length(), DecodeError);
  Reader r6 = reader_of(neg);
  EXPECT_THROW(r6.read_nullable_bytes(), DecodeError);
}

TEST(Reader, ArrayLengths) {
  std::vector<uint8_t> b = {0xff, 0xff, 0xff, 0xff, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00};
  Reader r = reader_of(b);
  EXPECT_EQ(r.read_array_length(), -1);
  EXPECT_EQ(r.read_compact_array_length(), -1);
  EXPECT_EQ(r.read_compact_array_length(), 2);
}

TEST(Reader, TaggedFieldsUnknownSkippedKnownHandled) {
  // 3 fields: tag 0 (2 bytes), tag 5 (3 bytes, unknown), tag 7 (1 byte), then a trailing int8.
  std::vector<uint8_t> b = {0x03, 0x00, 0x02, 0x12, 0x34, 0x05, 0x03,
                            0xaa, 0xbb, 0xcc, 0x07, 0x01, 0x2a, 0x63};
  Reader r = reader_of(b);
  int16_t t0 = 0;
  int8_t t7 = 0;
  r.read_tagged_fields([&](uint32_t tag, uint32_t) {
    if (tag == 0) {
      t0 = r.read_int16();
      return true;
    }
    if (tag == 7) {
      t7 = r.read_int8();
      return true;
    }
    return false;
  });
  EXPECT_EQ(t0, 0x1234);
  EXPECT_EQ(t7, 42);
  EXPECT_EQ(r.read_int8(), 0x63);
}

TEST(Reader, TaggedFieldSizeMismatchOrOverrunThrows) {
  std::vector<uint8_t> b = {0x01, 0x00, 0x03, 0x00, 0x01, 0x02};
  Reader r = reader_of(b);
  EXPECT_THROW(r.read_tagged_fields([&](uint32_t, uint32_t) {
    r.read_int16();  // consumes 2 of the declared 3
    return true;
  }),
               DecodeError);
  std::vector<uint8_t> over = {0x01, 0x00, 0x09, 0x00};
  Reader r2 = reader_of(over);
  EXPECT_THROW(r2.skip_tagged_fields(), DecodeError);
  std::vector<uint8_t> many = {0xff, 0xff, 0xff, 0xff, 0x0f};
  Reader r3 = reader_of(many);
  EXPECT_THROW(r3.skip_tagged_fields(), DecodeError);
}

TEST(Reader, Skip) {
  std::vector<uint8_t> b = {1, 2, 3};
  Reader r = reader_of(b);
  r.skip(2);
  EXPECT_EQ(r.position(), 2u);
  EXPECT_THROW(r.skip(2), DecodeError);
  EXPECT_EQ(r.read_int8(), 3);
}

TEST(Uuid, Base64UrlLikeKafka) {
  Uuid zero;
  EXPECT_EQ(zero.to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
  Uuid one;
  one.bytes[15] = 1;
  EXPECT_EQ(one.to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
  Uuid u;
  for (int i = 0; i < 16; ++i) u.bytes[i] = static_cast<uint8_t>(0xf0 + i);
  std::string s = u.to_string();
  EXPECT_EQ(s.size(), 22u);
  auto back = Uuid::parse(s);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, u);
  EXPECT_FALSE(Uuid::parse("short").has_value());
  EXPECT_FALSE(Uuid::parse("AAAAAAAAAAAAAAAAAAAAA*").has_value());
}

TEST(Uuid, RandomIsVersion4AndDistinct) {
  Uuid a = Uuid::random();
  Uuid b = Uuid::random();
  EXPECT_NE(a, b);
  EXPECT_FALSE(a.is_zero());
  EXPECT_EQ(a.bytes[6] >> 4, 4);
  EXPECT_EQ(a.bytes[8] >> 6, 2);
  for (int i = 0; i < 200; ++i) EXPECT_NE(Uuid::random().to_string()[0], '-');
}

}  // namespace
}  // namespace strata::protocol
