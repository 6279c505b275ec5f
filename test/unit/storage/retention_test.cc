// Retention: segments deleted by retention.ms (largest timestamp), retention.bytes and a moved log
// start offset; the all-expired active segment is rolled then deleted; the owner's bound is
// honoured; a crash at every step of a retention pass leaves a complete, readable log.
#include "storage/retention.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "storage/file_names.h"
#include "storage/partition_log.h"
#include "test/unit/storage/compaction_util.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

LogConfig small_segments() {
  LogConfig c;
  c.segment_bytes = 300;  // about two 10-record batches per segment
  c.index_interval_bytes = 0;
  return c;
}

// Four batches of 5 records per timestamp, so segments hold distinct timestamps.
void fill(PartitionLog& log, const std::vector<int64_t>& batch_ts) {
  for (int64_t ts : batch_ts) append_n(log, 5, ts, 0, 20);
}

TEST(Retention, DeletesSegmentsPastRetentionMsAndMovesLogStart) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  fill(*log, {1000, 1000, 1000, 1000, 5000, 5000, 5000, 5000, 9000, 9000});
  const auto before = log->segment_base_offsets();
  ASSERT_GE(before.size(), 4u);
  const int64_t leo = log->log_end_offset();

  // now=10000, retention 6000: segments whose largest timestamp is 1000 go (10000-1000 > 6000).
  auto r = Retention::enforce(*log, {true, 6000, -1}, 10000);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_GT(r->deleted_segments, 0);
  EXPECT_FALSE(r->rolled_active);
  const int64_t start = log->log_start_offset();
  EXPECT_EQ(start, log->segment_base_offsets().front());
  EXPECT_GT(start, 0);
  EXPECT_EQ(log->log_end_offset(), leo);
  for (int64_t b : before) {
    EXPECT_EQ(std::filesystem::exists(segment_log_path(tmp.sub("t-0"), b)), b >= start) << b;
  }
  // Everything from the new start is readable; below it is out of range.
  auto recs = dump_log(*log);
  ASSERT_FALSE(recs.empty());
  EXPECT_EQ(recs.front().offset, start);
  EXPECT_EQ(recs.back().offset, leo - 1);
  for (const auto& rec : recs) EXPECT_GT(rec.timestamp, 1000);
  EXPECT_EQ(log->read(0, 1000, true, log->high_watermark()).status().code(), Errc::out_of_range);

  // Survives a restart (log start = first segment's base).
  ASSERT_TRUE(log->close().ok());
  log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  EXPECT_EQ(log->log_start_offset(), start);
}

TEST(Retention, AllExpiredActiveSegmentIsRolledThenDeleted) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  fill(*log, {1000, 1000, 1000});
  const int64_t leo = log->log_end_offset();
  auto r = Retention::enforce(*log, {true, 100, -1}, 100000);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->rolled_active);
  EXPECT_EQ(log->log_start_offset(), leo);
  EXPECT_EQ(log->log_end_offset(), leo);
  EXPECT_EQ(log->segment_base_offsets(), std::vector<int64_t>{leo});
  EXPECT_TRUE(dump_log(*log).empty());
  // Appends continue at the same offsets.
  EXPECT_EQ(append_n(*log, 2, 100000), leo);
  // An empty active segment is never rolled again.
  r = Retention::enforce(*log, {true, 100, -1}, 10'000'000);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->rolled_active);
  r = Retention::enforce(*log, {true, 100, -1}, 10'000'000);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->rolled_active);
  EXPECT_EQ(r->deleted_segments, 0);
}

TEST(Retention, RetentionBytesKeepsTheNewestSegments) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  fill(*log, std::vector<int64_t>(12, 1000));
  const int64_t total = log->size_bytes();
  const int64_t limit = total / 2;
  auto r = Retention::enforce(*log, {true, -1, limit}, 2000);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->deleted_segments, 0);
  EXPECT_LE(log->size_bytes(), limit + 300);
  EXPECT_GE(log->size_bytes(), limit - 300);
  // compact-only topics (delete disabled) keep everything.
  const int64_t size = log->size_bytes();
  r = Retention::enforce(*log, {false, 0, 0}, 1'000'000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->deleted_segments, 0);
  EXPECT_EQ(log->size_bytes(), size);
}

TEST(Retention, DeletesSegmentsBelowAMovedLogStartAndHonoursTheBound) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  fill(*log, std::vector<int64_t>(10, 1000));
  const auto bases = log->segment_base_offsets();
  ASSERT_GE(bases.size(), 4u);
  int64_t bound = bases[1];
  log->set_retention_bound([&bound] { return bound; });

  // Time retention would delete everything, the bound allows only the first segment.
  auto r = Retention::enforce(*log, {true, 10, -1}, 100000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->deleted_segments, 1);
  EXPECT_EQ(log->log_start_offset(), bases[1]);

  // DeleteRecords moves the start into segment 3: segments 1 and 2 go (compact-only policy too).
  bound = std::numeric_limits<int64_t>::max();
  auto moved = log->delete_records_before(bases[3] + 1);
  ASSERT_TRUE(moved.ok());
  r = Retention::enforce(*log, {false, -1, -1}, 100000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->deleted_segments, 2);
  EXPECT_EQ(log->segment_base_offsets().front(), bases[3]);
  EXPECT_EQ(log->log_start_offset(), bases[3] + 1);  // never moves backwards
}

// Crash (every mutating operation failing from the n-th on, then power loss) at each step of a
// retention pass that rolls and deletes: after reopening, the log is complete from its start.
TEST(Retention, CrashAtEveryStep) {
  for (int64_t now : {10000, 100000}) {  // 100000: the active segment is rolled and deleted too
    for (int n = 0; n < 40; ++n) {
      SCOPED_TRACE("now " + std::to_string(now) + ", crash after op " + std::to_string(n));
      TempDir tmp;
      FaultInjectionEnv env;
      const std::string dir = tmp.sub("t-0");
      int64_t leo = 0;
      std::vector<StoredRecord> full;
      {
        auto log = open_log(&env, dir, small_segments());
        fill(*log, {1000, 1000, 1000, 9000});
        ASSERT_TRUE(log->flush().ok());
        leo = log->log_end_offset();
        full = dump_log(*log);
        env.fail_after(n);
        auto r = Retention::enforce(*log, {true, 5000, -1}, now);
        env.clear_faults();
        if (n == 39) {
          EXPECT_TRUE(r.ok() && r->deleted_segments > 0);
        }
      }
      ASSERT_TRUE(env.drop_unsynced_data().ok());
      auto log = open_log(&env, dir, small_segments());
      ASSERT_NE(log, nullptr);
      EXPECT_EQ(log->log_end_offset(), leo);
      auto recs = dump_log(*log);
      if (!recs.empty()) {
        EXPECT_EQ(recs.back().offset, leo - 1);
        EXPECT_EQ(recs.front().offset, log->log_start_offset());
      } else {
        EXPECT_EQ(log->log_start_offset(), leo);
      }
      // Exactly a suffix of the original records.
      ASSERT_LE(recs.size(), full.size());
      EXPECT_TRUE(
          std::equal(recs.begin(), recs.end(), full.end() - static_cast<long>(recs.size())));
      // No stray files; a second pass completes the job.
      for (const auto& e : std::filesystem::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.ends_with(".index") || name.ends_with(".timeindex") ||
            name.ends_with(".txnindex")) {
          EXPECT_TRUE(std::filesystem::exists(dir + "/" + name.substr(0, 20) + ".log")) << name;
        }
      }
      auto r = Retention::enforce(*log, {true, 5000, -1}, now);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      recs = dump_log(*log);
      EXPECT_EQ(recs.size(), now == 10000 ? 5u : 0u);
      for (const auto& rec : recs) EXPECT_EQ(rec.timestamp, 9000);
    }
  }
}

}  // namespace
}  // namespace strata::storage
