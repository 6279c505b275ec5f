// Timestamp queries: offset_for_timestamp searches inside batches (time index, batch maxTimestamp,
// then records), max_timestamp finds the record carrying the largest timestamp.
#include <gtest/gtest.h>

#include <algorithm>

#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

std::optional<int64_t> offset_for(const PartitionLog& log, int64_t ts) {
  auto r = log.offset_for_timestamp(ts);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok() || !*r) return std::nullopt;
  return (*r)->offset;
}

TEST(Timestamps, SearchInsideBatches) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"));
  auto a = make_batch({100, 300, 200});                                // offsets 0..2
  auto b = make_batch({150, 400});                                     // 3..4
  auto c = make_batch({500, 450, 600}, 10, codec::Compression::gzip);  // 5..7
  ASSERT_TRUE(log->append(a, 0).ok());
  ASSERT_TRUE(log->append(b, 0).ok());
  ASSERT_TRUE(log->append(c, 0).ok());
  for (int pass = 0; pass < 2; ++pass) {
    EXPECT_EQ(offset_for(*log, 50), 0);
    EXPECT_EQ(offset_for(*log, 100), 0);
    EXPECT_EQ(offset_for(*log, 101), 1);
    EXPECT_EQ(offset_for(*log, 250), 1);
    EXPECT_EQ(offset_for(*log, 301), 4);
    EXPECT_EQ(offset_for(*log, 401), 5);
    EXPECT_EQ(offset_for(*log, 460), 5);
    EXPECT_EQ(offset_for(*log, 501), 7);
    EXPECT_EQ(offset_for(*log, 601), std::nullopt);
    auto hit = log->offset_for_timestamp(250);
    EXPECT_EQ((*hit)->timestamp, 300);
    EXPECT_EQ((*hit)->leader_epoch, 0);  // the epoch stamped into the batch
    auto max = log->max_timestamp();
    ASSERT_TRUE(max.ok());
    ASSERT_TRUE(max->has_value());
    EXPECT_EQ((*max)->offset, 7);
    EXPECT_EQ((*max)->timestamp, 600);
    ASSERT_TRUE(log->close().ok());
    log = open_log(default_env(), tmp.sub("t-0"));
  }
}

TEST(Timestamps, EmptyLogHasNoAnswers) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"));
  EXPECT_EQ(offset_for(*log, 0), std::nullopt);
  auto max = log->max_timestamp();
  ASSERT_TRUE(max.ok());
  EXPECT_FALSE(max->has_value());
}

TEST(Timestamps, MaxTimestampPicksTheFirstRecordWithIt) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"));
  auto a = make_batch({10, 90, 20});
  auto b = make_batch({90, 5});
  ASSERT_TRUE(log->append(a, 0).ok());
  ASSERT_TRUE(log->append(b, 0).ok());
  auto max = log->max_timestamp();
  EXPECT_EQ((*max)->offset, 1);
  EXPECT_EQ((*max)->timestamp, 90);
}

TEST(Timestamps, LogAppendTimeBatchesUseMaxTimestamp) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"));
  auto a = make_batch({1, 2, 3});
  protocol::set_log_append_time(a, 5000);
  ASSERT_TRUE(log->append(a, 0).ok());
  EXPECT_EQ(offset_for(*log, 4000), 0);
  auto hit = log->offset_for_timestamp(5000);
  EXPECT_EQ((*hit)->timestamp, 5000);
  EXPECT_EQ(offset_for(*log, 5001), std::nullopt);
}

// Many batches over several segments with a dense sparse index; compares every answer with a
// brute-force scan of the records appended.
TEST(Timestamps, MatchesBruteForceAcrossSegments) {
  TempDir tmp;
  LogConfig config;
  config.segment_bytes = 4000;
  config.index_interval_bytes = 200;
  auto log = open_log(default_env(), tmp.sub("t-0"), config);
  std::vector<int64_t> ts_of_offset;
  for (int i = 0; i < 300; ++i) {
    // Mostly rising timestamps with some records going back in time.
    std::vector<int64_t> ts;
    for (int r = 0; r < 1 + i % 4; ++r) ts.push_back(100 + i * 10 + ((i + r) % 5 == 0 ? -25 : r));
    auto b = make_batch(ts);
    ASSERT_TRUE(log->append(b, 0).ok());
    ts_of_offset.insert(ts_of_offset.end(), ts.begin(), ts.end());
  }
  ASSERT_GT(log->segment_base_offsets().size(), 3u);
  auto brute = [&](int64_t target) -> std::optional<int64_t> {
    for (size_t o = 0; o < ts_of_offset.size(); ++o) {
      if (ts_of_offset[o] >= target) return static_cast<int64_t>(o);
    }
    return std::nullopt;
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t target = 50; target < 3120; target += 7) {
      ASSERT_EQ(offset_for(*log, target), brute(target)) << "target " << target;
    }
    auto max = log->max_timestamp();
    auto it = std::max_element(ts_of_offset.begin(), ts_of_offset.end());
    EXPECT_EQ((*max)->offset, it - ts_of_offset.begin());
    EXPECT_EQ((*max)->timestamp, *it);
    log.reset();  // crash, then recover
    log = open_log(default_env(), tmp.sub("t-0"), config);
  }
}

}  // namespace
}  // namespace strata::storage
