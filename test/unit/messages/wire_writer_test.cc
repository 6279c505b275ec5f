// Unit tests for protocol/wire/writer.h: byte layouts, back-patching, records parts and
// external file segments, flatten().
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "protocol/wire/reader.h"
#include "protocol/wire/sizes.h"
#include "protocol/wire/writer.h"

namespace strata::protocol {
namespace {

TEST(Writer, PrimitiveLayouts) {
  Writer w;
  w.write_int8(-2);
  w.write_int16(0x0102);
  w.write_int32(-1);
  w.write_int64(0x0102030405060708);
  w.write_uint16(0xabcd);
  w.write_bool(true);
  EXPECT_EQ(w.buffer(),
            (std::vector<uint8_t>{0xfe, 0x01, 0x02, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02, 0x03, 0x04,
                                  0x05, 0x06, 0x07, 0x08, 0xab, 0xcd, 0x01}));
}

TEST(Writer, VarintsMatchSizes) {
  for (uint32_t v : {0u, 1u, 127u, 128u, 16383u, 16384u, 0xffffffffu}) {
    Writer w;
    w.write_uvarint(v);
    EXPECT_EQ(w.size(), wire_size::uvarint(v)) << v;
    Reader r(w.buffer().data(), w.size());
    EXPECT_EQ(r.read_uvarint(), v);
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{63}, int64_t{-64}, int64_t{64}, INT64_MIN}) {
    Writer w;
    w.write_varlong(v);
    EXPECT_EQ(w.size(), wire_size::varlong(v)) << v;
  }
  Writer w;
  w.write_uvarint(300);
  EXPECT_EQ(w.buffer(), (std::vector<uint8_t>{0xac, 0x02}));
}

TEST(Writer, StringsAndArrays) {
  Writer w;
  w.write_string("ab");
  w.write_nullable_string(std::nullopt);
  w.write_compact_string("xyz");
  w.write_array_length(2);
  w.write_compact_array_length(-1);
  w.write_compact_array_length(3);
  EXPECT_EQ(w.buffer(), (std::vector<uint8_t>{0x00, 0x02, 'a', 'b', 0xff, 0xff, 0x04, 'x', 'y', 'z',
                                              0x00, 0x00, 0x00, 0x02, 0x00, 0x04}));
}

// An int16-length string holds at most 32,767 bytes: a longer one flags the writer (its bytes
// must not be sent); compact strings have no such limit; clear() starts over.
TEST(Writer, StringTooLongForInt16LengthFlagsTheWriter) {
  Writer w;
  w.write_string(std::string(0x7fff, 'a'));
  w.write_nullable_string(std::nullopt);
  w.write_compact_string(std::string(0x8000, 'b'));
  EXPECT_FALSE(w.overflowed());
  w.write_nullable_string(std::string(0x8000, 'c'));
  EXPECT_TRUE(w.overflowed());
  w.clear();
  EXPECT_FALSE(w.overflowed());
  w.write_string(std::string(0x10000, 'd'));  // would wrap to a length of 0
  EXPECT_TRUE(w.overflowed());
}

TEST(Writer, PatchInt32) {
  Writer w;
  w.write_int32(0);
  w.write_int16(7);
  w.patch_int32(0, static_cast<int32_t>(w.size() - 4));
  EXPECT_EQ(w.buffer(), (std::vector<uint8_t>{0, 0, 0, 2, 0, 7}));
}

TEST(Writer, InMemoryRecordsAreCopied) {
  const uint8_t a[] = {1, 2, 3};
  const uint8_t b[] = {4, 5};
  Records rec;
  rec.is_null = false;
  rec.parts.push_back(RecordsPart{nullptr, a, -1, 0, 3});
  rec.parts.push_back(RecordsPart{nullptr, b, -1, 0, 2});
  EXPECT_EQ(rec.size(), 5u);
  Writer w;
  w.write_records(rec, false);
  w.write_records(Records(), true);
  w.write_records(Records(), false);
  EXPECT_EQ(w.buffer(),
            (std::vector<uint8_t>{0, 0, 0, 5, 1, 2, 3, 4, 5, 0x00, 0xff, 0xff, 0xff, 0xff}));
  EXPECT_TRUE(w.external().empty());
  EXPECT_EQ(rec, Records::view(std::span<const uint8_t>(w.buffer().data() + 4, 5)));
}

TEST(Writer, FileRecordsBecomeExternalSegments) {
  char path[] = "/tmp/strata_writer_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const uint8_t file_bytes[] = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'};
  ASSERT_EQ(::write(fd, file_bytes, sizeof(file_bytes)), static_cast<ssize_t>(sizeof(file_bytes)));
  const uint8_t mem[] = {0xaa};
  Records rec;
  rec.is_null = false;
  rec.parts.push_back(RecordsPart{nullptr, nullptr, fd, 2, 4});  // "2345"
  rec.parts.push_back(RecordsPart{nullptr, mem, -1, 0, 1});
  rec.parts.push_back(RecordsPart{nullptr, nullptr, fd, 8, 2});  // "89"
  Writer w;
  w.write_int8(0x11);
  w.write_records(rec, true);
  w.write_int8(0x22);
  EXPECT_EQ(w.size(), 1u + 1 + 1 + 1);  // int8 + length + in-memory part + int8
  EXPECT_EQ(w.total_size(), w.size() + 6);
  ASSERT_EQ(w.external().size(), 2u);
  EXPECT_EQ(w.external()[0].first, 2u);
  EXPECT_EQ(w.external()[1].first, 3u);
  std::vector<uint8_t> flat = flatten(w);
  EXPECT_EQ(flat, (std::vector<uint8_t>{0x11, 8, '2', '3', '4', '5', 0xaa, '8', '9', 0x22}));
  ::close(fd);
  ::unlink(path);
}

}  // namespace
}  // namespace strata::protocol
