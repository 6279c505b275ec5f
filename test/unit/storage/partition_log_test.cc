// PartitionLog: offset assignment, restarts, leader epochs, segment rolls, sparse-index lookups,
// flush policy.
#include "storage/partition_log.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "storage/file_names.h"
#include "storage/file_util.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

TEST(PartitionLog, OffsetsAcrossAppendsAndRestarts) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  {
    auto log = open_log(default_env(), dir);
    EXPECT_EQ(log->log_start_offset(), 0);
    EXPECT_EQ(log->log_end_offset(), 0);
    EXPECT_EQ(append_n(*log, 5), 0);
    EXPECT_EQ(append_n(*log, 1), 5);
    auto batch = make_batch_n(3);
    auto info = log->append(batch, 0);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->base_offset, 6);
    EXPECT_EQ(info->last_offset, 8);
    // The caller's buffer was rewritten in place: baseOffset and partitionLeaderEpoch.
    EXPECT_EQ(protocol::RecordBatchView(batch).base_offset(), 6);
    EXPECT_EQ(protocol::RecordBatchView(batch).validate(), protocol::BatchCheck::ok);
    EXPECT_EQ(log->log_end_offset(), 9);
    EXPECT_EQ(log->high_watermark(), 9);
    ASSERT_TRUE(log->close().ok());
    EXPECT_EQ(log->append(batch, 0).status().code(), Errc::shutting_down);
  }
  {
    auto log = open_log(default_env(), dir);
    EXPECT_FALSE(log->recovered_at_open());  // clean shutdown: files trusted
    EXPECT_EQ(log->log_end_offset(), 9);
    EXPECT_EQ(append_n(*log, 2), 9);
    // No close(): an unclean shutdown.
  }
  {
    auto log = open_log(default_env(), dir);
    EXPECT_TRUE(log->recovered_at_open());
    EXPECT_EQ(log->truncated_bytes_at_open(), 0u);
    EXPECT_EQ(log->log_end_offset(), 11);
    EXPECT_EQ(append_n(*log, 1), 11);
    auto all = log->read(0, 1 << 20, true, log->high_watermark());
    ASSERT_TRUE(all.ok());
    auto batches = split_batches(read_bytes(*all));
    ASSERT_EQ(batches.size(), 5u);
    std::vector<int64_t> bases;
    for (auto& b : batches) bases.push_back(b.base_offset());
    EXPECT_EQ(bases, (std::vector<int64_t>{0, 5, 6, 9, 11}));
  }
  EXPECT_TRUE(std::filesystem::exists(dir + "/00000000000000000000.log"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/00000000000000000000.index"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/00000000000000000000.timeindex"));
}

TEST(PartitionLog, LeaderEpochBumpsOnEveryOpenAndIsStamped) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  {
    auto log = open_log(default_env(), dir);
    EXPECT_EQ(log->leader_epoch(), 0);
    append_n(*log, 2);
  }
  {
    auto log = open_log(default_env(), dir);
    EXPECT_EQ(log->leader_epoch(), 1);
    auto batch = make_batch_n(3);
    auto info = log->append(batch, 0);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->leader_epoch, 1);
    ASSERT_TRUE(log->close().ok());
  }
  auto log = open_log(default_env(), dir);
  EXPECT_EQ(log->leader_epoch(), 2);
  EXPECT_EQ(*read_file_to_string(default_env(), dir + "/leader-epoch-checkpoint"),
            "0\n3\n0 0\n1 2\n2 5\n");
  auto all = log->read(0, 1 << 20, true, log->high_watermark());
  auto batches = split_batches(read_bytes(*all));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].partition_leader_epoch(), 0);
  EXPECT_EQ(batches[1].partition_leader_epoch(), 1);
  EXPECT_EQ(log->epoch_for_offset(0), 0);
  EXPECT_EQ(log->epoch_for_offset(1), 0);
  EXPECT_EQ(log->epoch_for_offset(4), 1);
  EXPECT_EQ(log->epoch_for_offset(5), 2);
  // Kafka's OffsetsForLeaderEpoch rules.
  EXPECT_EQ(log->end_offset_for_epoch(0), std::make_pair(0, int64_t{2}));
  EXPECT_EQ(log->end_offset_for_epoch(1), std::make_pair(1, int64_t{5}));
  EXPECT_EQ(log->end_offset_for_epoch(2), std::make_pair(2, int64_t{5}));
  EXPECT_EQ(log->end_offset_for_epoch(7), std::make_pair(-1, int64_t{-1}));
  EXPECT_EQ(log->end_offset_for_epoch(-1), std::make_pair(-1, int64_t{-1}));
}

TEST(PartitionLog, EmptyOpensStillBumpEpoch) {
  TempDir tmp;
  for (int i = 0; i < 3; ++i) {
    auto log = open_log(default_env(), tmp.sub("t-0"));
    EXPECT_EQ(log->leader_epoch(), i);
  }
  EXPECT_EQ(*read_file_to_string(default_env(), tmp.sub("t-0/leader-epoch-checkpoint")),
            "0\n1\n2 0\n");
}

TEST(PartitionLog, RollsBySize) {
  TempDir tmp;
  LogConfig config;
  config.segment_bytes = 1000;
  auto log = open_log(default_env(), tmp.sub("t-0"), config);
  const size_t batch_size = make_batch_n(4, 1000, 50).size();
  ASSERT_LT(batch_size, 1000u);
  const int per_segment = static_cast<int>(1000 / batch_size);
  for (int i = 0; i < per_segment * 3; ++i) append_n(*log, 4, 1000, 0, 50);
  auto bases = log->segment_base_offsets();
  ASSERT_EQ(bases.size(), 3u);
  EXPECT_EQ(bases[1], per_segment * 4);
  EXPECT_EQ(bases[2], per_segment * 8);
  for (int64_t b : bases) {
    const std::string path = segment_log_path(tmp.sub("t-0"), b);
    EXPECT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_LE(file_size(path), 1000u);
  }
  // Rolled segments are durable: the persisted recovery point is the active segment's base.
  EXPECT_EQ(*read_file_to_string(default_env(), tmp.sub("t-0/recovery-point")),
            std::to_string(bases[2]) + "\n");
  // A read spanning all three segments returns every batch in order.
  auto r = log->read(0, 1 << 20, false, log->high_watermark());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ranges.size(), 3u);
  auto batches = split_batches(read_bytes(*r));
  ASSERT_EQ(batches.size(), static_cast<size_t>(per_segment * 3));
  for (size_t i = 0; i < batches.size(); ++i) {
    EXPECT_EQ(batches[i].base_offset(), static_cast<int64_t>(i * 4));
  }
  // A batch bigger than a segment goes alone into a fresh one.
  append_n(*log, 1, 1000, 0, 2000);
  EXPECT_EQ(log->segment_base_offsets().size(), 4u);
}

TEST(PartitionLog, WritesBackTheActiveSegmentEveryMinBytes) {
  TempDir tmp;
  LogConfig config;
  config.segment_bytes = 64 << 10;
  FaultInjectionEnv env;  // counts write-backs; the files are real (sync_file_range runs)
  auto log = open_log(&env, tmp.sub("t-0"), config);
  const uint64_t step = 8 << 10;
  const std::string active = segment_log_path(tmp.sub("t-0"), 0);
  ASSERT_TRUE(log->write_back_ahead(step).ok());
  EXPECT_EQ(log->written_back_bytes(), 0u);  // nothing appended yet
  EXPECT_EQ(env.write_backs(active), 0);
  append_n(*log, 10, 1000, 0, 1000);  // ~10 KiB
  ASSERT_TRUE(log->write_back_ahead(step).ok());
  EXPECT_EQ(env.write_backs(active), 1);
  EXPECT_EQ(log->written_back_bytes(), file_size(active));
  const uint64_t first = log->written_back_bytes();
  append_n(*log, 2, 1000, 0, 1000);  // less than a step more: not yet
  ASSERT_TRUE(log->write_back_ahead(step).ok());
  EXPECT_EQ(env.write_backs(active), 1);
  EXPECT_EQ(log->written_back_bytes(), first);
  append_n(*log, 8, 1000, 0, 1000);  // a step past the last write-back
  ASSERT_TRUE(log->write_back_ahead(step).ok());
  EXPECT_EQ(env.write_backs(active), 2);
  EXPECT_EQ(log->written_back_bytes(), file_size(active));
  EXPECT_GE(log->written_back_bytes(), first + step);
  const uint64_t before_roll = log->written_back_bytes();
  // After a roll the new active segment counts from its own start: less than a step of it is
  // not written back, however much the old one had.
  while (log->segment_base_offsets().size() < 2) append_n(*log, 1, 1000, 0, 1000);
  const int64_t base = log->segment_base_offsets().back();
  const std::string next = segment_log_path(tmp.sub("t-0"), base);
  ASSERT_LT(file_size(next), step);
  ASSERT_TRUE(log->write_back_ahead(step).ok());
  EXPECT_EQ(log->written_back_bytes(), before_roll);
  EXPECT_EQ(env.write_backs(next), 0);
  while (file_size(next) < step) append_n(*log, 2, 1000, 0, 1000);
  ASSERT_TRUE(log->write_back_ahead(step).ok());
  EXPECT_EQ(env.write_backs(next), 1);
  EXPECT_EQ(log->written_back_bytes(), file_size(next));
}

TEST(PartitionLog, RollsByTime) {
  TempDir tmp;
  LogConfig config;
  config.segment_ms = 100;
  auto log = open_log(default_env(), tmp.sub("t-0"), config, 0);
  append_n(*log, 1, 1000, /*now_ms=*/1000);
  append_n(*log, 1, 1000, /*now_ms=*/1050);
  EXPECT_EQ(log->segment_base_offsets().size(), 1u);
  append_n(*log, 1, 1000, /*now_ms=*/1101);
  EXPECT_EQ(log->segment_base_offsets(), (std::vector<int64_t>{0, 2}));
  append_n(*log, 1, 1000, /*now_ms=*/1150);
  EXPECT_EQ(log->segment_base_offsets().size(), 2u);
}

TEST(PartitionLog, RollsWhenIndexIsFull) {
  TempDir tmp;
  LogConfig config;
  config.index_interval_bytes = 1;  // an index entry for every batch after the first
  config.max_index_bytes = 24;      // 3 offset entries, 2 time entries
  auto log = open_log(default_env(), tmp.sub("t-0"), config);
  for (int i = 0; i < 10; ++i) append_n(*log, 1, 1000 + i);
  EXPECT_GT(log->segment_base_offsets().size(), 2u);
  EXPECT_EQ(log->log_end_offset(), 10);
}

TEST(PartitionLog, IndexLookupAcrossManyBatches) {
  TempDir tmp;
  LogConfig config;
  config.index_interval_bytes = 300;
  config.segment_bytes = 64 * 1024;
  const std::string dir = tmp.sub("t-0");
  std::vector<std::pair<int64_t, int64_t>> expected;  // base, last
  {
    auto log = open_log(default_env(), dir, config);
    for (int i = 0; i < 600; ++i) {
      int n = 1 + (i * 7) % 5;
      int64_t base = append_n(*log, n, 1000 + i, 0, 20 + (i % 3) * 40);
      expected.emplace_back(base, base + n - 1);
    }
    ASSERT_GT(log->segment_base_offsets().size(), 1u);
    ASSERT_TRUE(log->close().ok());
  }
  // The sparse index has entries at roughly every 300 bytes.
  auto idx_size = file_size(segment_index_path(dir, 0));
  EXPECT_GT(idx_size, 8u * 100);
  EXPECT_EQ(idx_size % 8, 0u);
  for (int pass = 0; pass < 2; ++pass) {  // after a clean reopen, then after a crash reopen
    auto log = open_log(default_env(), dir, config);
    for (const auto& [base, last] : expected) {
      for (int64_t o = base; o <= last; ++o) {
        auto r = log->read(o, 1, true, log->high_watermark());
        ASSERT_TRUE(r.ok());
        auto batches = split_batches(read_bytes(*r));
        ASSERT_EQ(batches.size(), 1u) << "offset " << o;
        EXPECT_EQ(batches[0].base_offset(), base) << "offset " << o;
        EXPECT_EQ(batches[0].last_offset(), last) << "offset " << o;
      }
    }
    if (pass == 1) {
      ASSERT_TRUE(log->close().ok());
    }
  }
}

TEST(PartitionLog, FlushPolicyByInterval) {
  TempDir tmp;
  LogConfig config;
  config.flush_interval_ms = 1000;
  auto log = open_log(default_env(), tmp.sub("t-0"), config, 0);
  append_n(*log, 3, 1000, 10);
  EXPECT_EQ(log->recovery_point(), 0);
  ASSERT_TRUE(log->flush_if_due(500).ok());
  EXPECT_EQ(log->recovery_point(), 0);  // not yet due
  ASSERT_TRUE(log->flush_if_due(1000).ok());
  EXPECT_EQ(log->recovery_point(), 3);
  append_n(*log, 2, 1000, 1100);
  ASSERT_TRUE(log->flush().ok());
  EXPECT_EQ(log->recovery_point(), 5);
}

TEST(PartitionLog, FlushPolicyByMessages) {
  TempDir tmp;
  LogConfig config;
  config.flush_interval_messages = 5;
  auto log = open_log(default_env(), tmp.sub("t-0"), config, 0);
  append_n(*log, 3);
  EXPECT_EQ(log->recovery_point(), 0);
  append_n(*log, 3);
  EXPECT_EQ(log->recovery_point(), 6);
}

TEST(PartitionLog, RejectsMalformedInput) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"));
  std::vector<uint8_t> tiny(10, 0);
  EXPECT_EQ(log->append(tiny, 0).status().code(), Errc::invalid_argument);
  auto two = make_batch_n(1);
  auto second = make_batch_n(1);
  two.insert(two.end(), second.begin(), second.end());
  EXPECT_EQ(log->append(two, 0).status().code(), Errc::invalid_argument);
  EXPECT_EQ(log->log_end_offset(), 0);
}

}  // namespace
}  // namespace strata::storage
