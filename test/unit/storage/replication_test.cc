// PartitionLog's replication calls by example: follower appends keep the leader's bytes, offsets
// and epochs; truncate_to / reset_to drop exactly what they say, durably; become_leader stamps
// its epoch; in replicated mode the high watermark only moves from outside.
#include <gtest/gtest.h>

#include <cstring>

#include "storage/file_names.h"
#include "storage/partition_log.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::open_log;
using testing::read_bytes;
using testing::split_batches;
using testing::TempDir;

LogConfig replicated_config() {
  LogConfig c;
  c.replicated = true;
  c.segment_bytes = 300;  // a few batches per segment
  c.index_interval_bytes = 60;
  return c;
}

// A batch at `base` of `records` records stamped `epoch`, optionally from producer `pid`.
std::vector<uint8_t> batch_at(int64_t base, int records, int32_t epoch, int64_t pid = -1,
                              int32_t seq = 0, int64_t ts = 1000) {
  protocol::RecordBatchBuilder b;
  b.set_base_offset(base).set_partition_leader_epoch(epoch);
  if (pid >= 0) b.set_producer(pid, 0, seq);
  std::vector<uint8_t> value(12, 'x');
  for (int i = 0; i < records; ++i) b.add(ts + i, std::nullopt, std::span<const uint8_t>(value));
  return b.build();
}

std::vector<uint8_t> concat(std::initializer_list<std::vector<uint8_t>> parts) {
  std::vector<uint8_t> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<uint8_t> all_bytes(const PartitionLog& log) {
  auto r = log.read(log.log_start_offset(), 1 << 30, true, INT64_MAX);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? read_bytes(*r) : std::vector<uint8_t>{};
}

TEST(FollowerAppend, KeepsTheLeadersBytesOffsetsAndEpochs) {
  TempDir d;
  auto leader = open_log(default_env(), d.sub("leader"));  // one node: epoch 0
  testing::append_n(*leader, 3);
  testing::append_n(*leader, 2);
  leader.reset();
  leader = open_log(default_env(), d.sub("leader"));  // epoch 1 from offset 5
  testing::append_n(*leader, 4);
  const std::vector<uint8_t> leader_bytes = all_bytes(*leader);

  auto follower = open_log(default_env(), d.sub("follower"), replicated_config());
  EXPECT_EQ(follower->latest_epoch(), -1);
  auto end = follower->append_as_follower(leader_bytes, 0);
  ASSERT_TRUE(end.ok()) << end.status().to_string();
  EXPECT_EQ(*end, 9);
  EXPECT_EQ(follower->log_end_offset(), 9);
  EXPECT_EQ(follower->durable_end_offset(), 9);
  EXPECT_EQ(follower->high_watermark(), 0);  // only moved from outside
  EXPECT_EQ(all_bytes(*follower), leader_bytes);
  EXPECT_GT(follower->segment_base_offsets().size(), 1u);  // rolled by segment.bytes
  EXPECT_EQ(follower->latest_epoch(), 1);
  EXPECT_EQ(follower->end_offset_for_epoch(0), std::make_pair(0, int64_t{5}));
  EXPECT_EQ(follower->end_offset_for_epoch(1), std::make_pair(1, int64_t{9}));
  EXPECT_EQ(follower->epoch_for_offset(6), std::optional<int32_t>(1));

  // The same after a clean restart and after a crash.
  follower->close();
  follower = open_log(default_env(), d.sub("follower"), replicated_config());
  EXPECT_EQ(all_bytes(*follower), leader_bytes);
  EXPECT_EQ(follower->latest_epoch(), 1);  // no bump at open in replicated mode
  follower.reset();
  follower = open_log(default_env(), d.sub("follower"), replicated_config());
  EXPECT_EQ(all_bytes(*follower), leader_bytes);
  EXPECT_EQ(follower->end_offset_for_epoch(0), std::make_pair(0, int64_t{5}));
}

TEST(FollowerAppend, RejectsCorruptAndMisplacedBatchesWithoutWritingAny) {
  TempDir d;
  auto log = open_log(default_env(), d.path(), replicated_config());
  ASSERT_TRUE(log->append_as_follower(batch_at(0, 2, 0), 0).ok());

  auto good = batch_at(2, 1, 0);
  auto bad = batch_at(3, 1, 0);
  bad.back() ^= 0x55;  // CRC mismatch
  auto r = log->append_as_follower(concat({good, bad}), 0);
  EXPECT_EQ(r.status().code(), Errc::corruption);
  EXPECT_EQ(log->log_end_offset(), 2);  // the valid first batch was not written either

  auto magic = batch_at(2, 1, 0);
  magic[16] = 1;
  EXPECT_EQ(log->append_as_follower(magic, 0).status().code(), Errc::corruption);
  std::vector<uint8_t> torn = batch_at(2, 1, 0);
  torn.resize(torn.size() - 3);
  EXPECT_EQ(log->append_as_follower(torn, 0).status().code(), Errc::corruption);

  EXPECT_EQ(log->append_as_follower(batch_at(3, 1, 0), 0).status().code(),
            Errc::invalid_argument);  // a hole at the log end
  EXPECT_EQ(log->append_as_follower(batch_at(1, 1, 0), 0).status().code(),
            Errc::invalid_argument);  // overlap
  EXPECT_EQ(
      log->append_as_follower(concat({batch_at(2, 2, 0), batch_at(3, 1, 0)}), 0).status().code(),
      Errc::invalid_argument);  // the second overlaps the first
  EXPECT_EQ(log->log_end_offset(), 2);

  // An offset gap between batches (a compacted leader log) is accepted.
  auto ok = log->append_as_follower(concat({batch_at(2, 1, 0), batch_at(7, 1, 0)}), 0);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(*ok, 8);
  auto batches = split_batches(all_bytes(*log));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2].base, 7);
}

TEST(FollowerAppend, ReplicatedProducerStateRejectsDuplicatesOnceLeading) {
  TempDir d;
  auto log = open_log(default_env(), d.path(), replicated_config());
  ASSERT_TRUE(
      log->append_as_follower(
             concat({batch_at(0, 2, 4, 7, 0), batch_at(2, 3, 4, 7, 2), batch_at(5, 1, 4)}), 0)
          .ok());
  auto st = log->producer_state(7);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->epoch, 0);
  EXPECT_EQ(st->last()->last_seq, 4);
  EXPECT_EQ(st->last()->first_offset, 2);

  // Not the leader yet: producer appends are refused.
  auto dup = batch_at(0, 3, -1, 7, 2);
  EXPECT_EQ(log->append(dup, 0).status().code(), Errc::invalid_argument);
  ASSERT_TRUE(log->become_leader(5).ok());
  auto r = log->append(dup, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->producer_check, ProducerCheck::duplicate);
  EXPECT_EQ(r->base_offset, 2);
  EXPECT_EQ(r->last_offset, 4);
  auto gap = batch_at(0, 1, -1, 7, 9);
  EXPECT_EQ(log->append(gap, 0)->producer_check, ProducerCheck::out_of_order);
  auto next = batch_at(0, 1, -1, 7, 5);
  r = log->append(next, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->producer_check, ProducerCheck::ok);
  EXPECT_EQ(r->base_offset, 6);
  EXPECT_EQ(r->leader_epoch, 5);
}

TEST(Truncate, DropsRecordsAtAndAboveAndRoundsDownInsideABatch) {
  TempDir d;
  auto log = open_log(default_env(), d.path(), replicated_config());
  // Epoch 1 at [0, 6), epoch 3 at [6, 14); producer 9 writes in both.
  ASSERT_TRUE(log->append_as_follower(
                     concat({batch_at(0, 3, 1, 9, 0), batch_at(3, 3, 1), batch_at(6, 2, 3, 9, 3),
                             batch_at(8, 3, 3), batch_at(11, 3, 3, 9, 5)}),
                     0)
                  .ok());
  ASSERT_GT(log->segment_base_offsets().size(), 2u);
  log->advance_high_watermark(14);
  EXPECT_EQ(log->high_watermark(), 14);
  const auto before = split_batches(all_bytes(*log));

  ASSERT_TRUE(log->truncate_to(12).ok());  // inside [11, 13]: rounded down to 11
  EXPECT_EQ(log->log_end_offset(), 11);
  EXPECT_EQ(log->durable_end_offset(), 11);
  EXPECT_EQ(log->high_watermark(), 11);
  EXPECT_EQ(log->producer_state(9)->last()->last_seq, 4);
  EXPECT_EQ(log->end_offset_for_epoch(3), std::make_pair(3, int64_t{11}));

  ASSERT_TRUE(log->truncate_to(6).ok());  // a batch boundary: epoch 3 goes entirely
  EXPECT_EQ(log->log_end_offset(), 6);
  EXPECT_EQ(log->latest_epoch(), 1);
  EXPECT_EQ(log->end_offset_for_epoch(1), std::make_pair(1, int64_t{6}));
  EXPECT_EQ(log->end_offset_for_epoch(3), std::make_pair(-1, int64_t{-1}));  // unknown now
  EXPECT_EQ(log->producer_state(9)->last()->last_seq, 2);
  auto after = split_batches(all_bytes(*log));
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[1].last, before[1].last);
  EXPECT_TRUE(log->truncate_to(6).ok());  // at the log end: nothing to do
  EXPECT_TRUE(log->truncate_to(100).ok());
  EXPECT_EQ(log->log_end_offset(), 6);

  // Appends continue at the cut, and everything holds after a crash.
  ASSERT_TRUE(log->append_as_follower(batch_at(6, 1, 4, 9, 3), 0).ok());
  log.reset();
  log = open_log(default_env(), d.path(), replicated_config());
  EXPECT_EQ(log->log_end_offset(), 7);
  EXPECT_EQ(log->end_offset_for_epoch(1), std::make_pair(1, int64_t{6}));
  EXPECT_EQ(log->end_offset_for_epoch(3), std::make_pair(1, int64_t{6}));
  EXPECT_EQ(log->end_offset_for_epoch(4), std::make_pair(4, int64_t{7}));
  EXPECT_EQ(log->producer_state(9)->last()->last_seq, 3);
  EXPECT_EQ(split_batches(all_bytes(*log)).size(), 3u);
}

TEST(Truncate, NeverMovesTheLogStartAndSurvivesAPowerLoss) {
  TempDir d;
  testing::FaultInjectionEnv env;
  {
    auto log = open_log(&env, d.path(), replicated_config());
    ASSERT_TRUE(log->append_as_follower(concat({batch_at(0, 3, 0, 5, 0), batch_at(3, 3, 0, 5, 3),
                                                batch_at(6, 3, 2, 5, 6), batch_at(9, 3, 2)}),
                                        0)
                    .ok());
    ASSERT_TRUE(log->advance_log_start_offset(4).ok());
    EXPECT_EQ(log->truncate_to(2).code(), Errc::invalid_argument);
    EXPECT_EQ(log->truncate_to(4).code(), Errc::invalid_argument);  // rounds to 3 < start
    EXPECT_EQ(log->log_end_offset(), 12);
    ASSERT_TRUE(log->truncate_to(7).ok());
    EXPECT_EQ(log->log_end_offset(), 6);
    EXPECT_EQ(log->log_start_offset(), 4);
  }
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  auto log = open_log(&env, d.path(), replicated_config());
  EXPECT_EQ(log->log_end_offset(), 6);  // the dropped records do not come back
  EXPECT_EQ(log->log_start_offset(), 4);
  EXPECT_EQ(log->latest_epoch(), 0);
  EXPECT_EQ(log->producer_state(5)->last()->last_seq, 5);
  auto batches = split_batches(all_bytes(*log));
  ASSERT_EQ(batches.size(), 1u);  // [3, 5] (the log start is inside it)
  EXPECT_EQ(batches[0].base, 3);
}

// A crash (power loss) at every file operation of truncate_to and reset_to: the reopened log is
// a prefix of the old one that is at least as long as the cut (or, for reset, either a prefix or
// the new empty log), never holds a byte the call dropped once it returned, and a retried call
// then gives exactly the expected log.
TEST(Truncate, PowerLossAtEveryStepLeavesAPrefixAndARetryCompletesIt) {
  const std::vector<uint8_t> bytes =
      concat({batch_at(0, 3, 0, 2, 0), batch_at(3, 3, 0, 2, 3), batch_at(6, 3, 1, 2, 6),
              batch_at(9, 3, 1), batch_at(12, 3, 2, 2, 9), batch_at(15, 3, 2)});
  LogConfig config = replicated_config();
  config.flush_interval_messages = 1;
  for (int reset = 0; reset < 2; ++reset) {
    for (int64_t n = 0;; ++n) {
      SCOPED_TRACE((reset ? "reset, step " : "truncate, step ") + std::to_string(n));
      TempDir d;
      testing::FaultInjectionEnv env;
      std::vector<uint8_t> full;
      bool done = false;
      {
        auto log = open_log(&env, d.path(), config);
        ASSERT_TRUE(log->append_as_follower(bytes, 0).ok());
        full = all_bytes(*log);
        env.fail_after(n);
        done = (reset ? log->reset_to(30) : log->truncate_to(7)).ok();
      }
      env.clear_faults();
      ASSERT_TRUE(env.drop_unsynced_data().ok());
      auto log = open_log(&env, d.path(), config);
      const std::vector<uint8_t> got = all_bytes(*log);
      if (log->log_start_offset() == 30) {
        EXPECT_TRUE(reset);
        EXPECT_TRUE(got.empty());
      } else {
        ASSERT_LE(got.size(), full.size());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), full.begin()));
        if (!reset) {
          EXPECT_GE(log->log_end_offset(), 6);
        }
        if (done) {
          EXPECT_EQ(log->log_end_offset(), reset ? 30 : 6);
        }
      }
      if (reset) {
        ASSERT_TRUE(log->reset_to(30).ok());
        EXPECT_EQ(log->log_end_offset(), 30);
        EXPECT_FALSE(log->producer_state(2).has_value());
        EXPECT_EQ(log->latest_epoch(), -1);
      } else {
        ASSERT_TRUE(log->truncate_to(7).ok());
        EXPECT_EQ(all_bytes(*log), concat({batch_at(0, 3, 0, 2, 0), batch_at(3, 3, 0, 2, 3)}));
        EXPECT_EQ(log->log_end_offset(), 6);
        EXPECT_EQ(log->latest_epoch(), 0);
        EXPECT_EQ(log->producer_state(2)->last()->last_seq, 5);
        auto batches = split_batches(all_bytes(*log));
        ASSERT_EQ(batches.size(), 2u);
      }
      if (done) break;
    }
  }
}

TEST(Reset, ContinuesEmptyAtTheOffsetDurably) {
  TempDir d;
  testing::FaultInjectionEnv env;
  {
    auto log = open_log(&env, d.path(), replicated_config());
    ASSERT_TRUE(log->append_as_follower(
                       concat({batch_at(0, 4, 0, 3, 0), batch_at(4, 4, 1), batch_at(8, 4, 1)}), 0)
                    .ok());
    log->close();
    log = open_log(&env, d.path(), replicated_config());  // a producer snapshot exists now
    ASSERT_TRUE(log->reset_to(50).ok());
    EXPECT_EQ(log->log_start_offset(), 50);
    EXPECT_EQ(log->log_end_offset(), 50);
    EXPECT_EQ(log->high_watermark(), 50);
    EXPECT_EQ(log->latest_epoch(), -1);
    EXPECT_FALSE(log->producer_state(3).has_value());
    EXPECT_TRUE(all_bytes(*log).empty());
    EXPECT_EQ(log->read(10, 100, true, INT64_MAX).status().code(), Errc::out_of_range);
    EXPECT_EQ(log->append_as_follower(batch_at(0, 1, 2), 0).status().code(),
              Errc::invalid_argument);
    ASSERT_TRUE(log->append_as_follower(batch_at(50, 2, 2), 0).ok());
  }
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  auto log = open_log(&env, d.path(), replicated_config());
  EXPECT_EQ(log->log_start_offset(), 50);
  EXPECT_FALSE(log->producer_state(3).has_value());
  EXPECT_LE(log->log_end_offset(), 52);  // the follower append itself was not fsynced
  EXPECT_GE(log->log_end_offset(), 50);
  EXPECT_EQ(log->segment_base_offsets(), std::vector<int64_t>{50});
}

TEST(BecomeLeader, RecordsTheEpochAtTheLogEndAndStampsIt) {
  TempDir d;
  auto log = open_log(default_env(), d.path(), replicated_config());
  ASSERT_TRUE(log->append_as_follower(batch_at(0, 2, 3), 0).ok());
  auto b = testing::make_batch_n(1);
  EXPECT_EQ(log->append(b, 0).status().code(), Errc::invalid_argument);  // not leading
  EXPECT_EQ(log->become_leader(2).code(), Errc::invalid_argument);       // below 3
  ASSERT_TRUE(log->become_leader(3).ok());  // the latest epoch: history unchanged
  EXPECT_EQ(log->end_offset_for_epoch(3), std::make_pair(3, int64_t{2}));
  ASSERT_TRUE(log->become_leader(6).ok());
  EXPECT_EQ(log->leader_epoch(), 6);
  auto r = log->append(b, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->base_offset, 2);
  EXPECT_EQ(r->leader_epoch, 6);
  EXPECT_EQ(log->end_offset_for_epoch(3), std::make_pair(3, int64_t{2}));
  EXPECT_EQ(log->end_offset_for_epoch(5), std::make_pair(3, int64_t{2}));
  EXPECT_EQ(log->end_offset_for_epoch(6), std::make_pair(6, int64_t{3}));
  auto batches = split_batches(all_bytes(*log));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].epoch, 6);

  // A leadership that ended before its first append is forgotten by a truncation to the log end
  // (the new leader's history diverges there), so an older epoch's batches can follow.
  ASSERT_TRUE(log->become_leader(7).ok());
  EXPECT_EQ(log->latest_epoch(), 7);
  ASSERT_TRUE(log->truncate_to(3).ok());
  EXPECT_EQ(log->latest_epoch(), 6);
  EXPECT_EQ(log->end_offset_for_epoch(6), std::make_pair(6, int64_t{3}));

  // A follower operation ends the leadership; a restart keeps the history without a bump.
  ASSERT_TRUE(log->truncate_to(100).ok());
  auto b2 = testing::make_batch_n(1);
  EXPECT_EQ(log->append(b2, 0).status().code(), Errc::invalid_argument);
  log->close();
  log = open_log(default_env(), d.path(), replicated_config());
  EXPECT_EQ(log->latest_epoch(), 6);
  EXPECT_EQ(log->append(b2, 0).status().code(), Errc::invalid_argument);

  // One node keeps today's behaviour: every open bumps, become_leader may go higher only.
  TempDir one;
  auto single = open_log(default_env(), one.path());
  EXPECT_EQ(single->leader_epoch(), 0);
  single.reset();
  single = open_log(default_env(), one.path());
  EXPECT_EQ(single->leader_epoch(), 1);
  EXPECT_EQ(single->become_leader(0).code(), Errc::invalid_argument);
  ASSERT_TRUE(single->become_leader(4).ok());
  EXPECT_EQ(testing::append_n(*single, 1), 0);
  EXPECT_EQ(single->epoch_for_offset(0), std::optional<int32_t>(4));
}

TEST(HighWatermark, ReplicatedModeMovesItOnlyFromOutsideUpToTheDurableEnd) {
  TempDir d;
  LogConfig config = replicated_config();
  config.flush_interval_messages = 3;
  auto log = open_log(default_env(), d.path(), config);
  std::vector<int64_t> hw_calls, end_calls;
  auto listeners = std::make_shared<PartitionLog::Listeners>();
  listeners->log_end = [&](const PartitionLog&, int64_t o) { end_calls.push_back(o); };
  listeners->high_watermark = [&](const PartitionLog&, int64_t o) { hw_calls.push_back(o); };
  log->set_listeners(listeners);
  ASSERT_TRUE(log->become_leader(0).ok());
  auto b = testing::make_batch_n(2);
  ASSERT_TRUE(log->append(b, 0).ok());
  EXPECT_EQ(log->high_watermark(), 0);
  EXPECT_EQ(log->durable_end_offset(), 2);
  EXPECT_EQ(end_calls, std::vector<int64_t>{2});
  EXPECT_TRUE(hw_calls.empty());
  EXPECT_EQ(log->advance_high_watermark(1), 1);
  EXPECT_EQ(log->advance_high_watermark(0), 1);   // never backwards
  EXPECT_EQ(log->advance_high_watermark(50), 2);  // never past the durable end
  EXPECT_EQ(log->advance_high_watermark(2), 2);   // no change: no notification
  EXPECT_EQ(hw_calls, (std::vector<int64_t>{1, 2}));
  auto r = log->read(0, 1 << 20, true, log->high_watermark());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(split_batches(read_bytes(*r)).size(), 1u);

  // A follower append moves the log end, not the high watermark.
  ASSERT_TRUE(log->append_as_follower(batch_at(2, 2, 0), 0).ok());
  EXPECT_EQ(log->high_watermark(), 2);
  EXPECT_EQ(end_calls, (std::vector<int64_t>{2, 4}));
  // After a restart nothing is readable until the high watermark is set again.
  log->close();
  log = open_log(default_env(), d.path(), config);
  EXPECT_EQ(log->high_watermark(), 0);
  EXPECT_EQ(log->advance_high_watermark(3), 3);

  // One node: the durable end, as before; advance_high_watermark changes nothing.
  TempDir one;
  auto single = open_log(default_env(), one.path());
  testing::append_n(*single, 3);
  EXPECT_EQ(single->high_watermark(), 3);
  EXPECT_EQ(single->advance_high_watermark(1), 3);
  ASSERT_TRUE(single->append_as_follower(batch_at(3, 2, 0), 0).ok());
  EXPECT_EQ(single->high_watermark(), 5);
}

}  // namespace
}  // namespace strata::storage
