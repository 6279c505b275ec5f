// What an append's success means: the durable end offset (fsynced when the flush policy asks for a
// flush on append, the log end otherwise), the high watermark derived from it, and that a failed
// fsync leaves nothing readable behind.
#include <gtest/gtest.h>

#include <atomic>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "storage/partition_log.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

constexpr int64_t kNoBound = std::numeric_limits<int64_t>::max();

bool is_log_file(const std::string& path) { return path.ends_with(".log"); }

// Last offsets of every batch readable from `from` with no upper bound but the log's own.
std::vector<int64_t> readable_last_offsets(const PartitionLog& log, int64_t from) {
  std::vector<int64_t> out;
  auto r = log.read(from, 1u << 30, true, kNoBound);
  if (!r.ok()) return out;
  for (const auto& b : split_batches(read_bytes(*r))) out.push_back(b.last_offset());
  return out;
}

// flush.messages=1: at the moment each append fsyncs its segment, neither the new batch nor a high
// watermark covering it is visible yet, so a consumer can only ever read (and commit) fsynced data.
TEST(DurableEnd, FlushPerMessageReadersNeverSeePastTheFsync) {
  TempDir tmp;
  FaultInjectionEnv env;
  LogConfig config;
  config.flush_interval_messages = 1;
  config.segment_bytes = 1500;  // rolls, so the fsync of a sealed segment is seen too
  auto log = open_log(&env, tmp.sub("t-0"), config);
  ASSERT_NE(log, nullptr);

  std::atomic<int64_t> end_before{0};
  std::vector<std::string> violations;
  int log_syncs = 0;
  env.set_hook([&](std::string_view op, const std::string& path) {
    if (op != "sync" || !is_log_file(path)) return Status::Ok();
    ++log_syncs;
    const int64_t before = end_before.load();
    if (log->high_watermark() != before || log->durable_end_offset() != before ||
        log->log_end_offset() != before) {
      violations.push_back("offsets moved before the fsync of the batch at " +
                           std::to_string(before) + ": hw " +
                           std::to_string(log->high_watermark()) + " durable " +
                           std::to_string(log->durable_end_offset()));
    }
    if (!readable_last_offsets(*log, before).empty()) {
      violations.push_back("the batch at " + std::to_string(before) +
                           " was readable before its fsync");
    }
    return Status::Ok();
  });

  // A concurrent reader bounded by the high watermark never gets a batch at or past the durable
  // end (read after the batch, so a lagging value can only make the check stricter).
  std::atomic<bool> stop{false};
  std::atomic<int64_t> reader_violations{0};
  std::thread reader([&] {
    while (!stop.load()) {
      auto r = log->read(0, 1u << 30, true, log->high_watermark());
      if (!r.ok()) continue;
      const auto batches = split_batches(read_bytes(*r));
      const int64_t durable = log->durable_end_offset();
      for (const auto& b : batches) {
        if (b.last_offset() >= durable) reader_violations.fetch_add(1);
      }
    }
  });

  for (int i = 0; i < 60; ++i) {
    auto b = make_batch_n(1 + i % 3);
    auto r = log->append(b, 0);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(log->durable_end_offset(), r->last_offset + 1);
    end_before.store(r->last_offset + 1);
  }
  stop.store(true);
  reader.join();
  env.clear_faults();

  EXPECT_GE(log_syncs, 60);
  EXPECT_TRUE(violations.empty()) << violations.front();
  EXPECT_EQ(reader_violations.load(), 0);
  ASSERT_GT(log->segment_base_offsets().size(), 1u);
}

// flush.messages=1 and the fsync fails (EIO): the append returns the error, the batch is never
// readable (not before, not after a restart, not after a power loss), no offset moves, no listener
// fires, and the log refuses further appends until it is reopened.
TEST(DurableEnd, FailedFsyncReturnsTheErrorAndTheRecordIsNeverReadable) {
  for (const bool power_loss : {false, true}) {
    SCOPED_TRACE(power_loss ? "power loss" : "restart");
    TempDir tmp;
    const std::string dir = tmp.sub("t-0");
    FaultInjectionEnv env;
    LogConfig config;
    config.flush_interval_messages = 1;
    {
      auto log = open_log(&env, dir, config);
      ASSERT_NE(log, nullptr);
      auto listeners = std::make_shared<PartitionLog::Listeners>();
      std::vector<int64_t> hw_seen;
      std::vector<int64_t> leo_seen;
      listeners->high_watermark = [&](const PartitionLog&, int64_t hw) { hw_seen.push_back(hw); };
      listeners->log_end = [&](const PartitionLog&, int64_t leo) { leo_seen.push_back(leo); };
      log->set_listeners(listeners);
      for (int i = 0; i < 3; ++i) append_n(*log, 1);
      ASSERT_EQ(hw_seen, (std::vector<int64_t>{1, 2, 3}));

      env.fail_syncs(1, ".log");
      auto b = make_batch_n(2);
      auto r = log->append(b, 0);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), Errc::io_error);

      EXPECT_EQ(log->log_end_offset(), 3);
      EXPECT_EQ(log->durable_end_offset(), 3);
      EXPECT_EQ(log->high_watermark(), 3);
      EXPECT_EQ(readable_last_offsets(*log, 0), (std::vector<int64_t>{0, 1, 2}));
      EXPECT_EQ(log->read(4, 1u << 20, true, kNoBound).status().code(), Errc::out_of_range);
      EXPECT_EQ(hw_seen, (std::vector<int64_t>{1, 2, 3}));
      EXPECT_EQ(leo_seen, (std::vector<int64_t>{1, 2, 3}));

      // Offline until reopened: nothing more is acknowledged on an fsync state nobody knows.
      auto again = make_batch_n(1);
      auto r2 = log->append(again, 0);
      ASSERT_FALSE(r2.ok());
      EXPECT_EQ(r2.status().code(), Errc::io_error);
      EXPECT_EQ(log->high_watermark(), 3);
    }
    if (power_loss) {
      ASSERT_TRUE(env.drop_unsynced_data().ok());
    }
    auto log = open_log(&env, dir, config);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->log_end_offset(), 3);
    EXPECT_EQ(log->high_watermark(), 3);
    EXPECT_EQ(readable_last_offsets(*log, 0), (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(append_n(*log, 1), 3);
    EXPECT_EQ(log->high_watermark(), 4);
  }
}

// After every successful append, whatever the flush policy: HW == durable end == log end, the
// high-watermark listener has fired with that value, and with flush.messages=1 the batch is below
// the recovery point (fsynced).
TEST(DurableEnd, EqualsLogEndAndHighWatermarkAfterEverySuccessfulAppend) {
  for (const int64_t flush_messages :
       {std::numeric_limits<int64_t>::max(), int64_t{5}, int64_t{1}}) {
    SCOPED_TRACE("flush.messages=" + std::to_string(flush_messages));
    TempDir tmp;
    FaultInjectionEnv env;
    LogConfig config;
    config.flush_interval_messages = flush_messages;
    config.segment_bytes = 1500;
    auto log = open_log(&env, tmp.sub("t-0"), config);
    ASSERT_NE(log, nullptr);
    auto listeners = std::make_shared<PartitionLog::Listeners>();
    int64_t last_hw_notified = -1;
    int hw_notifications = 0;
    listeners->high_watermark = [&](const PartitionLog& l, int64_t hw) {
      last_hw_notified = hw;
      ++hw_notifications;
      EXPECT_EQ(hw, l.high_watermark());
    };
    log->set_listeners(listeners);
    for (int i = 0; i < 40; ++i) {
      auto b = make_batch_n(1 + i % 4);
      auto r = log->append(b, 0);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      const int64_t end = r->last_offset + 1;
      EXPECT_EQ(log->log_end_offset(), end);
      EXPECT_EQ(log->durable_end_offset(), end);
      EXPECT_EQ(log->high_watermark(), end);
      EXPECT_EQ(last_hw_notified, end);
      EXPECT_EQ(hw_notifications, i + 1);
      if (flush_messages == 1) {
        EXPECT_EQ(log->recovery_point(), end);
      }
    }
    // Reopening after a power loss: everything that survived counts as durable again.
    log.reset();
    ASSERT_TRUE(env.drop_unsynced_data().ok());
    log = open_log(&env, tmp.sub("t-0"), config);
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->durable_end_offset(), log->log_end_offset());
    EXPECT_EQ(log->high_watermark(), log->log_end_offset());
    if (flush_messages == 1) {
      EXPECT_EQ(log->log_end_offset(), 100);  // 40 batches of 1..4 records
    }
  }
}

}  // namespace
}  // namespace strata::storage
