// Fault classes of file errors (storage/env.h, docs/storage.md "Fault classes"): errnos are
// classified where they happen; running out of descriptors is retried within an append and, when
// it lasts, fails the append while the log stays writable; a full disk rejects appends, leaves no
// partial bytes behind, keeps reads working and accepts appends again once space is back; a failed
// fsync still takes the log offline. Each test injects a fault, checks the error class, clears the
// fault, appends again and checks that a restart finds exactly the acknowledged records.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"
#include "storage/retention.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max();
using Span = std::pair<int64_t, int64_t>;  // base, last offset of one batch

std::vector<Span> readable(const PartitionLog& log) {
  std::vector<Span> out;
  auto r = log.read(log.log_start_offset(), 1u << 30, true, kNoBound);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return out;
  for (const auto& b : split_batches(read_bytes(*r))) out.emplace_back(b.base, b.last);
  return out;
}

// Bytes of every .log file on disk: equals the published size when no partial write was left.
int64_t log_bytes_on_disk(const std::string& dir) {
  int64_t total = 0;
  auto names = default_env()->list_dir(dir);
  EXPECT_TRUE(names.ok());
  if (!names.ok()) return -1;
  for (const auto& n : *names) {
    if (parse_segment_log_name(n)) total += static_cast<int64_t>(file_size(join_path(dir, n)));
  }
  return total;
}

Result<PartitionLog::AppendInfo> try_append(PartitionLog& log, int records, int64_t ts = 1000,
                                            size_t value_size = 40) {
  auto b = make_batch_n(records, ts, value_size);
  return log.append(b, 0);
}

LogConfig rolling_config() {
  LogConfig c;
  c.segment_bytes = 400;  // about every third batch of 2 records rolls
  c.index_interval_bytes = 1;
  return c;
}

TEST(FaultClass, ErrnosAreClassifiedWhereTheyHappen) {
  for (int e : {EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR}) {
    EXPECT_EQ(file_error("open", "/x", e).code(), Errc::unavailable) << e;
  }
  for (int e : {ENOSPC, EDQUOT}) EXPECT_EQ(file_error("write", "/x", e).code(), Errc::no_space);
  for (int e : {EIO, EROFS, EBADF, 4242}) {
    EXPECT_EQ(file_error("write", "/x", e).code(), Errc::io_error) << e;
  }
  // A failed fsync may have lost earlier writes, whatever its errno.
  for (int e : {EIO, ENOSPC, EDQUOT, EINTR}) {
    EXPECT_EQ(sync_error("fdatasync", "/x", e).code(), Errc::io_error);
  }
  EXPECT_NE(file_error("write", "/x", ENOSPC).message().find("/x"), std::string::npos);
}

// The POSIX Env itself: /dev/full answers every write with ENOSPC, and a lowered descriptor limit
// makes open(2) fail with EMFILE.
TEST(FaultClass, PosixEnvReportsRealErrnosByClass) {
  auto full = default_env()->new_writable_file("/dev/full", /*truncate=*/false);
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  const uint8_t bytes[4] = {1, 2, 3, 4};
  EXPECT_EQ((*full)->append(bytes).code(), Errc::no_space);
  TempDir tmp;
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  std::vector<int> held;
  rlimit low = old;
  low.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int fd = ::dup(0); fd >= 0; fd = ::dup(0)) held.push_back(fd);
  auto f = default_env()->new_writable_file(tmp.sub("f"), false);
  for (int fd : held) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), Errc::unavailable) << f.status().to_string();
}

// A roll that cannot open a file for a moment (EMFILE twice) succeeds within the append.
TEST(FaultClass, BriefDescriptorShortageAtARollIsRetriedWithinTheAppend) {
  TempDir tmp;
  FaultInjectionEnv env;
  auto log = open_log(&env, tmp.sub("t-0"), rolling_config());
  ASSERT_NE(log, nullptr);
  while (log->segment_base_offsets().size() == 1) {
    const int64_t leo = log->log_end_offset();
    env.inject(FaultOp::open, Fault{EMFILE, 2, ".index", 0});
    auto r = try_append(*log, 2);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->base_offset, leo);
  }
  EXPECT_EQ(env.injected_count(), 2);
  EXPECT_EQ(log->segment_base_offsets().back(), log->log_end_offset() - 2);
}

// Descriptors stay short through every retry, at each file the roll opens: the append fails with
// Errc::unavailable, nothing moves, reads keep working, and once descriptors are back the next
// append finishes the roll. Restart and power loss (flush.messages=1) find exactly the acked
// records.
TEST(FaultClass, LastingDescriptorShortageAtARollFailsTheAppendAndTheLogStaysWritable) {
  for (const std::string suffix :
       {"", ".snapshot.tmp", "recovery-point.tmp", ".log", ".index", ".timeindex"}) {
    SCOPED_TRACE("open of '*" + suffix + "' fails");
    TempDir tmp;
    const std::string dir = tmp.sub("t-0");
    FaultInjectionEnv env;
    LogConfig config = rolling_config();
    config.flush_interval_messages = 1;
    std::vector<Span> acked;
    {
      auto log = open_log(&env, dir, config);
      ASSERT_NE(log, nullptr);
      bool failed_once = false;
      for (int i = 0; i < 12; ++i) {
        const int64_t leo = log->log_end_offset();
        const int64_t before = env.injected_count();
        if (i == 4) env.inject(FaultOp::open, Fault{EMFILE, -1, suffix, 0});
        auto r = try_append(*log, 2, 1000 + i);
        if (!r.ok()) {
          failed_once = true;
          EXPECT_EQ(r.status().code(), Errc::unavailable) << r.status().to_string();
          EXPECT_EQ(env.injected_count() - before, PartitionLog::kTransientAttempts);
          EXPECT_EQ(log->log_end_offset(), leo);
          EXPECT_EQ(log->high_watermark(), leo);
          EXPECT_EQ(readable(*log), acked);
          EXPECT_EQ(log_bytes_on_disk(dir), log->size_bytes());
          env.clear_faults();
          continue;
        }
        ASSERT_EQ(r->base_offset, leo);
        acked.emplace_back(r->base_offset, r->last_offset);
      }
      EXPECT_TRUE(failed_once);
      EXPECT_EQ(readable(*log), acked);
      EXPECT_GE(log->segment_base_offsets().size(), 3u);
    }
    ASSERT_TRUE(env.drop_unsynced_data().ok());
    auto log = open_log(&env, dir, config);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(readable(*log), acked);
    EXPECT_EQ(log->truncated_bytes_at_open(), 0u);
    EXPECT_EQ(append_n(*log, 1), acked.back().second + 1);
  }
}

// A full disk (ENOSPC on every write, each a short write that lands some bytes first) rejects
// appends with Errc::no_space, rolls included, without leaving a byte of them on disk; reads keep
// working; when space is back the next append succeeds at the next offset. A crash and a power
// loss afterwards find exactly the acked records and no torn tail.
TEST(FaultClass, FullDiskRejectsAppendsLeavesNoPartialBytesAndWritesResume) {
  for (const bool power_loss : {false, true}) {
    for (const size_t short_write : {size_t{0}, size_t{7}, size_t{100000}}) {
      SCOPED_TRACE(std::string(power_loss ? "power loss" : "crash") + ", short write " +
                   std::to_string(short_write));
      TempDir tmp;
      const std::string dir = tmp.sub("t-0");
      FaultInjectionEnv env;
      LogConfig config = rolling_config();
      if (power_loss) config.flush_interval_messages = 1;
      std::vector<Span> acked;
      {
        auto log = open_log(&env, dir, config);
        ASSERT_NE(log, nullptr);
        for (int i = 0; i < 3; ++i) {
          auto r = try_append(*log, 2, 1000 + i);
          ASSERT_TRUE(r.ok());
          acked.emplace_back(r->base_offset, r->last_offset);
        }
        env.inject(FaultOp::write, Fault{ENOSPC, -1, "", short_write});
        for (int i = 0; i < 6; ++i) {  // every other one is large enough to need a roll
          auto r = try_append(*log, 1, 2000 + i, i % 2 == 0 ? 40 : 300);
          ASSERT_FALSE(r.ok());
          EXPECT_EQ(r.status().code(), Errc::no_space) << r.status().to_string();
          EXPECT_EQ(log->log_end_offset(), acked.back().second + 1);
          EXPECT_EQ(readable(*log), acked);
          EXPECT_EQ(log_bytes_on_disk(dir), log->size_bytes());
        }
        EXPECT_GT(env.injected_count(), 0);
        env.clear_faults();
        for (int i = 0; i < 4; ++i) {
          auto r = try_append(*log, 2, 3000 + i);
          ASSERT_TRUE(r.ok()) << r.status().to_string();
          EXPECT_EQ(r->base_offset, acked.back().second + 1);
          acked.emplace_back(r->base_offset, r->last_offset);
        }
        EXPECT_EQ(readable(*log), acked);
      }
      if (power_loss) {
        ASSERT_TRUE(env.drop_unsynced_data().ok());
      }
      auto log = open_log(&env, dir, config);
      ASSERT_NE(log, nullptr);
      EXPECT_EQ(readable(*log), acked);
      EXPECT_EQ(log->truncated_bytes_at_open(), 0u);
    }
  }
}

// The .log write succeeded but an index write ran out of space (a short time-index entry): the
// index entries already written and the batch's bytes are rolled back, the log stays writable,
// and after a clean close the indexes load as written (no rebuild) and serve lookups.
TEST(FaultClass, IndexWriteOutOfSpaceIsRolledBack) {
  for (const std::string suffix : {".index", ".timeindex"}) {
    for (const bool flush_each : {false, true}) {
      SCOPED_TRACE(suffix + (flush_each ? ", flush.messages=1" : ""));
      TempDir tmp;
      const std::string dir = tmp.sub("t-0");
      FaultInjectionEnv env;
      LogConfig config;
      config.index_interval_bytes = 1;  // an index entry for every batch after the first
      if (flush_each) config.flush_interval_messages = 1;
      std::vector<Span> acked;
      {
        auto log = open_log(&env, dir, config);
        ASSERT_NE(log, nullptr);
        for (int i = 0; i < 3; ++i) {
          auto r = try_append(*log, 1, 1000 + i);
          ASSERT_TRUE(r.ok());
          acked.emplace_back(r->base_offset, r->last_offset);
        }
        const uint64_t index_size = file_size(segment_index_path(dir, 0));
        const uint64_t time_size = file_size(segment_time_index_path(dir, 0));
        env.inject(FaultOp::write, Fault{ENOSPC, 1, suffix, 5});
        auto r = try_append(*log, 1, 5000);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.status().code(), Errc::no_space);
        EXPECT_EQ(env.injected_count(), 1);
        EXPECT_EQ(file_size(segment_index_path(dir, 0)), index_size);
        EXPECT_EQ(file_size(segment_time_index_path(dir, 0)), time_size);
        EXPECT_EQ(log_bytes_on_disk(dir), log->size_bytes());
        EXPECT_EQ(readable(*log), acked);
        for (int i = 0; i < 3; ++i) {
          auto ok = try_append(*log, 1, 6000 + i);
          ASSERT_TRUE(ok.ok()) << ok.status().to_string();
          acked.emplace_back(ok->base_offset, ok->last_offset);
        }
        ASSERT_TRUE(log->close().ok());
      }
      EXPECT_EQ(file_size(segment_index_path(dir, 0)) % 8, 0u);
      EXPECT_EQ(file_size(segment_time_index_path(dir, 0)) % 12, 0u);
      auto log = open_log(&env, dir, config);
      ASSERT_NE(log, nullptr);
      EXPECT_FALSE(log->recovered_at_open());
      EXPECT_EQ(readable(*log), acked);
      for (const auto& [base, last] : acked) {
        auto one = log->read(base, 1, true, kNoBound);
        ASSERT_TRUE(one.ok());
        auto batches = split_batches(read_bytes(*one));
        ASSERT_EQ(batches.size(), 1u);
        EXPECT_EQ(batches[0].base, base);
      }
      auto at = log->offset_for_timestamp(6001);
      ASSERT_TRUE(at.ok() && at->has_value());
      EXPECT_EQ((*at)->offset, acked[acked.size() - 2].first);
    }
  }
}

// An fsync that fails once (EIO, then syncs work again) is still persistent: the append fails
// with Errc::io_error and the log refuses appends until it is reopened, at a roll (sealing the old
// segment) as at a flush.messages=1 append. ENOSPC from fsync counts the same: written pages may
// have been dropped.
TEST(FaultClass, FailedFsyncStillTakesTheLogOffline) {
  for (const int err : {EIO, ENOSPC}) {
    for (const bool at_roll : {true, false}) {
      SCOPED_TRACE(std::string(at_roll ? "roll" : "flush") + " errno " + std::to_string(err));
      TempDir tmp;
      const std::string dir = tmp.sub("t-0");
      FaultInjectionEnv env;
      LogConfig config = rolling_config();
      if (!at_roll) {
        config.segment_bytes = 1 << 20;
        config.flush_interval_messages = 1;
      }
      std::vector<Span> acked;
      {
        auto log = open_log(&env, dir, config);
        ASSERT_NE(log, nullptr);
        auto r0 = try_append(*log, 2);
        ASSERT_TRUE(r0.ok());
        acked.emplace_back(r0->base_offset, r0->last_offset);
        env.inject(FaultOp::sync, Fault{err, 1, ".log", 0});
        Status last;
        while (env.injected_count() == 0) {
          auto r = try_append(*log, 2);
          last = r.status();
          if (r.ok()) acked.emplace_back(r->base_offset, r->last_offset);
        }
        EXPECT_EQ(last.code(), Errc::io_error) << last.to_string();
        auto again = try_append(*log, 1);  // the fsync would work now; the log stays offline
        ASSERT_FALSE(again.ok());
        EXPECT_EQ(again.status().code(), Errc::io_error);
        EXPECT_EQ(readable(*log), acked);
      }
      auto log = open_log(&env, dir, config);
      ASSERT_NE(log, nullptr);
      EXPECT_EQ(readable(*log), acked);
      EXPECT_EQ(append_n(*log, 1), acked.back().second + 1);
    }
  }
}

// Retention rolls the active segment when everything expired: out of descriptors there, the pass
// fails with Errc::unavailable and the log stays writable; the next pass succeeds.
TEST(FaultClass, RetentionRollOutOfDescriptorsKeepsTheLogWritable) {
  TempDir tmp;
  FaultInjectionEnv env;
  auto log = open_log(&env, tmp.sub("t-0"), rolling_config());
  ASSERT_NE(log, nullptr);
  append_n(*log, 2, 1000);
  env.inject(FaultOp::open, Fault{EMFILE, -1, "", 0});
  auto r = Retention::enforce(*log, {true, 5000, -1}, 100000);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Errc::unavailable);
  env.clear_faults();
  EXPECT_EQ(append_n(*log, 2, 90000), 2);
  auto again = Retention::enforce(*log, {true, 5000, -1}, 100000);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(append_n(*log, 1, 100000), 4);
}

// Random faults before random appends, every class and file kind: an
// append fails exactly when an injected fault fired (and was not absorbed by the retries), with
// the fault's class; a retriable failure leaves the log writable, a persistent one offline until
// the "broker" reopens it. Acked offsets are contiguous, and after each reopen (a power loss
// included) the log holds exactly the acked records.
TEST(FaultClass, RandomFaultsMatchAModelOfAckedRecords) {
  struct Kind {
    FaultOp op;
    int err;
    Errc expected;
  };
  const std::vector<Kind> kinds = {
      {FaultOp::open, EMFILE, Errc::unavailable},  {FaultOp::open, ENFILE, Errc::unavailable},
      {FaultOp::write, EAGAIN, Errc::unavailable}, {FaultOp::write, ENOSPC, Errc::no_space},
      {FaultOp::write, EDQUOT, Errc::no_space},    {FaultOp::open, ENOSPC, Errc::no_space},
      {FaultOp::write, EIO, Errc::io_error},       {FaultOp::sync, EIO, Errc::io_error},
      {FaultOp::open, EIO, Errc::io_error},
  };
  const std::vector<std::string> suffixes = {"", ".log", ".index", ".timeindex", ".tmp"};
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    TempDir tmp;
    const std::string dir = tmp.sub("t-0");
    FaultInjectionEnv env;
    // Odd seeds fsync every append, so a power loss may come at any reopen; even seeds keep the
    // default policy (acked = in the page cache) and reopen after a crash only.
    const bool flush_each = seed % 2 == 1;
    LogConfig config = rolling_config();
    if (flush_each) config.flush_interval_messages = 1;
    std::vector<Span> acked;
    int reopens = 0;
    int failures = 0;
    auto log = open_log(&env, dir, config);
    ASSERT_NE(log, nullptr);
    for (int step = 0; step < 80; ++step) {
      const int64_t expected_base = acked.empty() ? 0 : acked.back().second + 1;
      std::optional<Kind> kind;
      int64_t count = 0;
      if (rng() % 3 == 0) {
        kind = kinds[rng() % kinds.size()];
        count = 1 + static_cast<int64_t>(rng() % 6);
        env.inject(kind->op, Fault{kind->err, count, suffixes[rng() % suffixes.size()],
                                   static_cast<size_t>(rng() % 50)});
      }
      const int64_t fired_before = env.injected_count();
      auto r = try_append(*log, 1 + static_cast<int>(rng() % 3), 1000 + step);
      const int64_t fired = env.injected_count() - fired_before;
      env.clear_faults();
      if (r.ok()) {
        ASSERT_EQ(r->base_offset, expected_base);
        acked.emplace_back(r->base_offset, r->last_offset);
        continue;
      }
      ++failures;
      ASSERT_TRUE(kind.has_value()) << r.status().to_string();
      ASSERT_GT(fired, 0) << r.status().to_string();
      EXPECT_EQ(r.status().code(), kind->expected) << r.status().to_string();
      EXPECT_EQ(log->log_end_offset(), expected_base);
      EXPECT_EQ(readable(*log), acked);
      if (retriable_io(r.status())) {
        EXPECT_EQ(log_bytes_on_disk(dir), log->size_bytes());
        continue;
      }
      // Persistent: offline until reopened (alternately after a restart and a power loss).
      EXPECT_EQ(try_append(*log, 1).status().code(), Errc::io_error);
      log.reset();
      if (++reopens % 2 == 0 && flush_each) {
        ASSERT_TRUE(env.drop_unsynced_data().ok());
      }
      log = open_log(&env, dir, config);
      ASSERT_NE(log, nullptr);
      ASSERT_EQ(readable(*log), acked);
    }
    EXPECT_GT(failures, 5);
    log.reset();
    if (flush_each) {
      ASSERT_TRUE(env.drop_unsynced_data().ok());
    }
    log = open_log(&env, dir, config);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(readable(*log), acked);
    EXPECT_EQ(log->truncated_bytes_at_open(), 0u);
  }
}

}  // namespace
}  // namespace strata::storage
