// OffsetIndex / TimeIndex: Kafka byte format, lookups, reload and sanity checks.
#include <gtest/gtest.h>

#include "storage/file_util.h"
#include "storage/offset_index.h"
#include "storage/time_index.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::TempDir;

TEST(OffsetIndex, KafkaFormatAndFloorLookup) {
  TempDir tmp;
  const std::string path = tmp.sub("00000000000000000100.index");
  auto idx = OffsetIndex::open(default_env(), path, 100, 1 << 20, false, 0);
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE((*idx)->append(110, 4200).ok());
  ASSERT_TRUE((*idx)->append(125, 9000).ok());
  ASSERT_TRUE((*idx)->append(125, 9999).ok());  // not increasing: ignored
  EXPECT_EQ((*idx)->entry_count(), 2u);
  auto data = read_file_to_string(default_env(), path);
  ASSERT_TRUE(data.ok());
  const std::string expect("\x00\x00\x00\x0a\x00\x00\x10\x68\x00\x00\x00\x19\x00\x00\x23\x28", 16);
  EXPECT_EQ(*data, expect);  // int32 relative offset, int32 position, big-endian

  EXPECT_EQ((*idx)->lookup(105).offset, 100);
  EXPECT_EQ((*idx)->lookup(105).position, 0u);
  EXPECT_EQ((*idx)->lookup(110).position, 4200u);
  EXPECT_EQ((*idx)->lookup(124).position, 4200u);
  EXPECT_EQ((*idx)->lookup(500).position, 9000u);

  // Reload keeps the entries; a log shorter than an entry's position fails the sanity check.
  idx->reset();
  auto again = OffsetIndex::open(default_env(), path, 100, 1 << 20, true, 10000);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->loaded_ok());
  EXPECT_EQ((*again)->entry_count(), 2u);
  again->reset();
  auto bad = OffsetIndex::open(default_env(), path, 100, 1 << 20, true, 5000);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE((*bad)->loaded_ok());
  EXPECT_EQ((*bad)->entry_count(), 0u);
  EXPECT_EQ(testing::file_size(path), 0u);
}

TEST(OffsetIndex, TruncateAndFull) {
  TempDir tmp;
  auto idx = OffsetIndex::open(default_env(), tmp.sub("i"), 0, 16, false, 0);
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE((*idx)->append(5, 100).ok());
  EXPECT_FALSE((*idx)->full());
  ASSERT_TRUE((*idx)->append(9, 200).ok());
  EXPECT_TRUE((*idx)->full());  // 16 bytes = 2 entries
  ASSERT_TRUE((*idx)->truncate_to_position(200).ok());
  EXPECT_EQ((*idx)->entry_count(), 1u);
  EXPECT_EQ(testing::file_size(tmp.sub("i")), 8u);
}

TEST(TimeIndex, KafkaFormatAndSearchStart) {
  TempDir tmp;
  const std::string path = tmp.sub("t");
  auto idx = TimeIndex::open(default_env(), path, 50, 1 << 20, false, 50);
  ASSERT_TRUE(idx.ok());
  ASSERT_TRUE((*idx)->maybe_append(1000, 59).ok());
  ASSERT_TRUE((*idx)->maybe_append(1000, 70).ok());  // timestamp did not grow: ignored
  ASSERT_TRUE((*idx)->maybe_append(2000, 80).ok());
  EXPECT_EQ((*idx)->entry_count(), 2u);
  auto data = read_file_to_string(default_env(), path);
  const std::string first("\x00\x00\x00\x00\x00\x00\x03\xe8\x00\x00\x00\x09", 12);
  EXPECT_EQ(data->substr(0, 12), first);  // int64 timestamp, int32 relative offset
  EXPECT_FALSE((*idx)->last_before(1000).has_value());
  EXPECT_EQ((*idx)->last_before(1001)->offset, 59);
  EXPECT_EQ((*idx)->last_before(5000)->offset, 80);
  EXPECT_EQ((*idx)->last_entry()->timestamp, 2000);
  idx->reset();
  auto again = TimeIndex::open(default_env(), path, 50, 1 << 20, true, 81);
  EXPECT_TRUE((*again)->loaded_ok());
  EXPECT_EQ((*again)->entry_count(), 2u);
  again->reset();
  auto bad = TimeIndex::open(default_env(), path, 50, 1 << 20, true, 80);  // offset 80 not in log
  EXPECT_FALSE((*bad)->loaded_ok());
}

}  // namespace
}  // namespace strata::storage
