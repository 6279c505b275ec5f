// Recovery: torn tails (garbage, half-written batch, CRC mismatch) are cut exactly at the end of
// the last valid batch; simulated power loss through FaultInjectionEnv loses nothing that was
// flushed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

void append_raw(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Reads the whole log and checks it holds exactly offsets [0, leo) in valid batches.
void expect_readable(PartitionLog& log) {
  auto r = log.read(0, 1u << 31, true, log.high_watermark());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  int64_t next = 0;
  for (auto& b : split_batches(read_bytes(*r))) {
    EXPECT_EQ(b.base_offset(), next);
    next = b.next_offset();
  }
  EXPECT_EQ(next, log.log_end_offset());
}

class TornTailTest : public ::testing::TestWithParam<int> {};

TEST_P(TornTailTest, TruncatesExactlyTheTornTail) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  const std::string seg = segment_log_path(dir, 0);
  {
    auto log = open_log(default_env(), dir);
    for (int i = 0; i < 3; ++i) append_n(*log, 2);
    if (GetParam() == 3) {
      ASSERT_TRUE(log->close().ok());  // clean close, then damage
    }
  }
  const uint64_t good_size = file_size(seg);
  std::vector<uint8_t> tail;
  switch (GetParam()) {
    case 0: {  // the first half of a valid batch
      auto b = make_batch_n(4);
      tail.assign(b.begin(), b.begin() + static_cast<long>(b.size() / 2));
      break;
    }
    case 1:  // garbage
      tail = std::vector<uint8_t>(333, 0xAB);
      break;
    case 2: {  // a whole batch whose CRC does not match
      tail = make_batch_n(4);
      tail[tail.size() - 3] ^= 0xFF;
      break;
    }
    case 3:  // garbage after a clean shutdown: header scan notices, full recovery runs
      tail = std::vector<uint8_t>(100, 0x07);
      break;
    case 4: {  // a valid batch followed by a half one: only the half goes
      auto b = make_batch_n(4);
      protocol::set_base_offset(b, 6);
      append_raw(seg, b);
      auto h = make_batch_n(2);
      tail.assign(h.begin(), h.begin() + 30);
      break;
    }
  }
  append_raw(seg, tail);
  const uint64_t expect_size = GetParam() == 4 ? good_size + make_batch_n(4).size() : good_size;
  auto log = open_log(default_env(), dir);
  EXPECT_EQ(log->truncated_bytes_at_open(), tail.size());
  EXPECT_EQ(file_size(seg), expect_size);
  const int64_t leo = GetParam() == 4 ? 10 : 6;
  EXPECT_EQ(log->log_end_offset(), leo);
  EXPECT_EQ(append_n(*log, 1), leo);
  expect_readable(*log);
}

INSTANTIATE_TEST_SUITE_P(Tails, TornTailTest, ::testing::Values(0, 1, 2, 3, 4));

TEST(Recovery, TornMiddleSegmentDropsLaterSegments) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  LogConfig config;
  config.segment_bytes = 500;
  std::vector<int64_t> bases;
  {
    auto log = open_log(default_env(), dir, config);
    for (int i = 0; i < 20; ++i) append_n(*log, 2);
    bases = log->segment_base_offsets();
    ASSERT_GE(bases.size(), 3u);
  }
  // Corrupt the tail of the second segment (below the recovery point: normally trusted).
  const std::string second = segment_log_path(dir, bases[1]);
  const uint64_t keep = file_size(second) - 5;
  std::filesystem::resize_file(second, keep);
  auto log = open_log(default_env(), dir, config);
  EXPECT_EQ(log->segment_base_offsets(), (std::vector<int64_t>{bases[0], bases[1]}));
  EXPECT_FALSE(std::filesystem::exists(segment_log_path(dir, bases[2])));
  const int64_t leo = log->log_end_offset();
  EXPECT_LT(leo, bases[2]);
  EXPECT_GT(leo, bases[1]);
  EXPECT_EQ(append_n(*log, 1), leo);
  expect_readable(*log);
}

TEST(Recovery, PowerLossWithFlushPerMessageLosesNothing) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  FaultInjectionEnv env;
  LogConfig config;
  config.flush_interval_messages = 1;
  config.segment_bytes = 2000;
  int64_t acked_end = 0;
  {
    auto log = open_log(&env, dir, config);
    for (int i = 0; i < 60; ++i) {
      auto b = make_batch_n(1 + i % 3);
      auto r = log->append(b, 0);
      ASSERT_TRUE(r.ok());
      acked_end = r->last_offset + 1;
    }
    ASSERT_GT(log->segment_base_offsets().size(), 2u);
  }
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  auto log = open_log(&env, dir, config);
  EXPECT_EQ(log->log_end_offset(), acked_end);
  expect_readable(*log);
}

TEST(Recovery, PowerLossWithDefaultPolicyLosesOnlyTheUnsyncedTail) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  FaultInjectionEnv env;
  int64_t flushed_end = 0;
  int64_t leo_before = 0;
  {
    auto log = open_log(&env, dir);
    for (int i = 0; i < 10; ++i) append_n(*log, 3);
    ASSERT_TRUE(log->flush().ok());
    flushed_end = log->log_end_offset();
    for (int i = 0; i < 10; ++i) append_n(*log, 3);
    leo_before = log->log_end_offset();
  }
  ASSERT_GT(leo_before, flushed_end);
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  auto log = open_log(&env, dir);
  EXPECT_EQ(log->log_end_offset(), flushed_end);
  EXPECT_EQ(log->leader_epoch(), 1);
  expect_readable(*log);
  // Offsets reused after the loss carry the new epoch.
  auto b = make_batch_n(1);
  auto r = log->append(b, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->base_offset, flushed_end);
  EXPECT_EQ(r->leader_epoch, 1);
  EXPECT_EQ(log->epoch_for_offset(flushed_end), 1);
}

// Crash at every mutating step of a run with rolls and flush-per-message: reopening always
// succeeds, keeps every acknowledged batch, and the log is readable and appendable.
TEST(Recovery, CrashAtEveryStep) {
  LogConfig config;
  config.flush_interval_messages = 1;
  config.segment_bytes = 700;
  config.index_interval_bytes = 100;
  for (int torn = 0; torn < 2; ++torn) {
    for (int64_t n = 0; n < 100; n += 4) {
      TempDir tmp;
      const std::string dir = tmp.sub("t-0");
      FaultInjectionEnv env;
      int64_t acked_end = 0;
      {
        auto log = open_log(&env, dir, config);
        ASSERT_NE(log, nullptr);
        env.set_torn_appends(torn == 1);
        env.fail_after(n);
        for (int i = 0; i < 25; ++i) {
          auto b = make_batch_n(1 + i % 2, 1000 + i);
          auto r = log->append(b, 0);
          if (!r.ok()) break;
          acked_end = r->last_offset + 1;
        }
      }
      env.clear_faults();
      ASSERT_TRUE(env.drop_unsynced_data().ok());
      auto log = open_log(&env, dir, config);
      ASSERT_NE(log, nullptr) << "step " << n;
      EXPECT_GE(log->log_end_offset(), acked_end) << "step " << n;
      expect_readable(*log);
      const int64_t leo = log->log_end_offset();
      EXPECT_EQ(append_n(*log, 1), leo);
    }
  }
}

// DeleteRecords (and a cleaner checkpoint) past records that were never fsynced, then a power
// loss: the torn tail is cut below the persisted log start. The files are rewritten to the new log
// end at open, so records appended afterwards stay readable from their own offsets across later
// restarts instead of being hidden by the stale log start.
TEST(Recovery, TruncationBelowThePersistedLogStartRewritesItAndTheCleanerCheckpoint) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  FaultInjectionEnv env;
  {
    auto log = open_log(&env, dir);
    for (int i = 0; i < 5; ++i) append_n(*log, 1);
    ASSERT_TRUE(log->flush().ok());
    for (int i = 0; i < 10; ++i) append_n(*log, 1);  // 5..14, only in the page cache
    auto start = log->delete_records_before(12);
    ASSERT_TRUE(start.ok()) << start.status().to_string();
    ASSERT_EQ(*start, 12);
    ASSERT_TRUE(write_file_atomically(&env, dir + "/cleaner-offset-checkpoint", "13\n").ok());
  }
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  ASSERT_EQ(*read_file_to_string(&env, dir + "/log-start-offset"), "12\n");  // it was fsynced
  {
    auto log = open_log(&env, dir);
    ASSERT_NE(log, nullptr);
    ASSERT_EQ(log->log_end_offset(), 5);
    EXPECT_EQ(log->log_start_offset(), 5);  // everything that survived was deleted before
    EXPECT_EQ(*read_file_to_string(&env, dir + "/log-start-offset"), "5\n");
    EXPECT_EQ(*read_file_to_string(&env, dir + "/cleaner-offset-checkpoint"), "5\n");
    for (int i = 0; i < 10; ++i) EXPECT_EQ(append_n(*log, 1), 5 + i);  // acked: 5..14 again
    ASSERT_TRUE(log->flush().ok());
  }
  for (const bool after_clean_close : {false, true}) {
    SCOPED_TRACE(after_clean_close ? "after a clean close" : "after a crash");
    ASSERT_TRUE(env.drop_unsynced_data().ok());
    auto log = open_log(&env, dir);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->log_start_offset(), 5);
    EXPECT_EQ(log->log_end_offset(), 15);
    auto r = log->read(5, 1u << 20, true, log->high_watermark());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    auto batches = split_batches(read_bytes(*r));
    ASSERT_EQ(batches.size(), 10u);
    EXPECT_EQ(batches.front().base_offset(), 5);
    EXPECT_EQ(batches.back().last_offset(), 14);
    if (!after_clean_close) {
      ASSERT_TRUE(log->close().ok());
    }
  }
}

// A consumer's committed offset past the log end after a power loss is answered out of range
// (Fetch turns this into OFFSET_OUT_OF_RANGE, broker/handlers/fetch.cc checks the same bound), so
// the consumer applies its reset policy instead of waiting at an offset the log no longer has.
TEST(Recovery, OffsetPastTheLogEndAfterPowerLossIsOutOfRange) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  FaultInjectionEnv env;
  {
    auto log = open_log(&env, dir);
    for (int i = 0; i < 5; ++i) append_n(*log, 2);
    ASSERT_TRUE(log->flush().ok());
    for (int i = 0; i < 5; ++i) append_n(*log, 2);
    ASSERT_TRUE(log->read(20, 100, true, log->high_watermark()).ok());  // "committed" at 20
  }
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  auto log = open_log(&env, dir);
  ASSERT_EQ(log->log_end_offset(), 10);
  EXPECT_EQ(log->read(20, 100, true, log->high_watermark()).status().code(), Errc::out_of_range);
  EXPECT_EQ(log->read(11, 100, true, log->high_watermark()).status().code(), Errc::out_of_range);
  auto at_end = log->read(10, 100, true, log->high_watermark());
  ASSERT_TRUE(at_end.ok());
  EXPECT_TRUE(at_end->ranges.empty());
}

TEST(Recovery, CrashWhileWritingTheEpochCheckpointKeepsTheOldOne) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  FaultInjectionEnv env;
  {
    auto log = open_log(&env, dir);
    append_n(*log, 1);
  }
  env.set_hook([](std::string_view op, const std::string& path) {
    return op == "rename" && path.find("leader-epoch-checkpoint") != std::string::npos
               ? Status(Errc::io_error, "crash")
               : Status::Ok();
  });
  EXPECT_FALSE(PartitionLog::open(&env, dir, {}, 0).ok());
  env.clear_faults();
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  EXPECT_EQ(*read_file_to_string(&env, dir + "/leader-epoch-checkpoint"), "0\n1\n0 0\n");
  auto log = open_log(&env, dir);
  EXPECT_EQ(log->leader_epoch(), 1);
  EXPECT_EQ(log->log_end_offset(), 1);
}

}  // namespace
}  // namespace strata::storage
