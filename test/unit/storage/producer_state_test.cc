// Idempotent-producer state: the table's rules (dedupe window of 5, sequence and epoch checks,
// expiration, snapshot encoding) and PartitionLog's use of it (dedupe inside append, snapshots at
// roll and clean close, rebuild from batch headers after a crash).
#include "storage/producer_state.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "storage/env.h"
#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::TempDir;

ProducerBatch pb(int64_t pid, int16_t epoch, int32_t seq, int32_t records, int64_t ts = 1000) {
  return ProducerBatch{pid, epoch, seq, records - 1, ts};
}

// A one-record-per-`records` idempotent batch.
std::vector<uint8_t> idem_batch(int64_t pid, int16_t epoch, int32_t seq, int records,
                                int64_t ts = 1000) {
  protocol::RecordBatchBuilder b(codec::Compression::none);
  b.set_producer(pid, epoch, seq);
  std::vector<uint8_t> value(10, 'v');
  for (int i = 0; i < records; ++i) b.add(ts, std::nullopt, std::span<const uint8_t>(value));
  return b.build();
}

TEST(ProducerStateTable, SequenceRulesFollowKafka) {
  ProducerStateTable t;
  // Unknown producer: any sequence is accepted (Kafka 2.5+).
  EXPECT_EQ(t.check(pb(7, 0, 42, 3)).kind, ProducerCheck::ok);
  t.apply(pb(7, 0, 0, 3), 100);  // seq 0..2 at offsets 100..102
  EXPECT_EQ(t.check(pb(7, 0, 3, 2)).kind, ProducerCheck::ok);
  auto gap = t.check(pb(7, 0, 4, 2));
  EXPECT_EQ(gap.kind, ProducerCheck::out_of_order);
  EXPECT_FALSE(gap.message.empty());
  EXPECT_EQ(t.check(pb(7, 0, 2, 2)).kind, ProducerCheck::out_of_order);  // overlaps, not a dup
  // Batches without a producer id are never checked.
  EXPECT_EQ(t.check(ProducerBatch{}).kind, ProducerCheck::ok);
}

TEST(ProducerStateTable, DuplicateWindowIsTheLastFiveBatches) {
  ProducerStateTable t;
  for (int i = 0; i < 7; ++i) t.apply(pb(1, 0, i * 10, 10), 1000 + i * 10);
  const ProducerEntry* e = t.find(1);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->count, kProducerBatchesToRetain);
  EXPECT_EQ(e->batch(0).first_seq, 20);
  EXPECT_EQ(e->last()->last_seq, 69);
  for (int i = 2; i < 7; ++i) {
    auto r = t.check(pb(1, 0, i * 10, 10));
    EXPECT_EQ(r.kind, ProducerCheck::duplicate) << i;
    EXPECT_EQ(r.dup_first_offset, 1000 + i * 10);
    EXPECT_EQ(r.dup_last_offset, 1000 + i * 10 + 9);
  }
  // Fell out of the window: no longer recognised, and out of sequence.
  EXPECT_EQ(t.check(pb(1, 0, 10, 10)).kind, ProducerCheck::out_of_order);
  // Same first sequence but a different range is not a duplicate.
  EXPECT_EQ(t.check(pb(1, 0, 60, 5)).kind, ProducerCheck::out_of_order);
  EXPECT_EQ(t.check(pb(1, 0, 70, 1)).kind, ProducerCheck::ok);
}

TEST(ProducerStateTable, EpochBumpOnlyAtSequenceZeroAndStaleEpochRejected) {
  ProducerStateTable t;
  t.apply(pb(5, 3, 0, 4), 0);
  EXPECT_EQ(t.check(pb(5, 4, 4, 1)).kind, ProducerCheck::out_of_order);
  EXPECT_EQ(t.check(pb(5, 2, 4, 1)).kind, ProducerCheck::stale_epoch);
  // A duplicate of the old epoch's batch after the bump is stale, not a duplicate.
  EXPECT_EQ(t.check(pb(5, 4, 0, 2)).kind, ProducerCheck::ok);
  t.apply(pb(5, 4, 0, 2), 4);
  EXPECT_EQ(t.find(5)->epoch, 4);
  EXPECT_EQ(t.find(5)->count, 1);  // the bump cleared the old epoch's batches
  EXPECT_EQ(t.check(pb(5, 3, 0, 4)).kind, ProducerCheck::stale_epoch);
  EXPECT_EQ(t.check(pb(5, 4, 0, 2)).kind, ProducerCheck::duplicate);
}

TEST(ProducerStateTable, SequenceWrapsAfterInt32Max) {
  ProducerStateTable t;
  const int32_t max = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(pb(1, 0, max - 1, 3).last_seq(), 0);
  t.apply(pb(1, 0, max - 1, 2), 0);  // max-1, max
  EXPECT_EQ(t.check(pb(1, 0, 0, 1)).kind, ProducerCheck::ok);
}

TEST(ProducerStateTable, ExpiresIdleProducersByLastTimestamp) {
  ProducerStateTable t;
  t.apply(pb(1, 0, 0, 1, /*ts=*/1000), 0);
  t.apply(pb(2, 0, 0, 1, /*ts=*/5000), 1);
  EXPECT_EQ(t.expire(/*now=*/5999, /*expiration=*/5000), 0u);
  EXPECT_EQ(t.expire(6000, 5000), 1u);
  EXPECT_EQ(t.find(1), nullptr);
  ASSERT_NE(t.find(2), nullptr);
  // An expired producer is unknown again: any sequence goes.
  EXPECT_EQ(t.check(pb(1, 0, 77, 1)).kind, ProducerCheck::ok);
}

TEST(ProducerStateTable, SnapshotRoundTripAndCorruptionDetected) {
  ProducerStateTable t;
  for (int i = 0; i < 6; ++i) t.apply(pb(9, 1, i * 2, 2, 100 + i), 50 + i * 2);
  t.apply(pb(3, 0, 0, 1, 7), 70);
  const std::string bytes = t.encode_snapshot(71);
  ProducerStateTable u;
  auto off = u.decode_snapshot(bytes);
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_EQ(*off, 71);
  ASSERT_NE(u.find(9), nullptr);
  EXPECT_EQ(u.find(9)->count, 5);
  EXPECT_EQ(u.find(9)->epoch, 1);
  EXPECT_EQ(u.find(9)->last_timestamp, 105);
  EXPECT_EQ(u.check(pb(9, 1, 2, 2)).kind, ProducerCheck::duplicate);
  EXPECT_EQ(u.check(pb(9, 1, 12, 1)).kind, ProducerCheck::ok);
  EXPECT_EQ(u.encode_snapshot(71), bytes);

  std::string bad = bytes;
  bad[bad.size() - 3] ^= 1;
  EXPECT_EQ(u.decode_snapshot(bad).status().code(), Errc::corruption);
  EXPECT_EQ(u.decode_snapshot(bytes.substr(0, bytes.size() - 1)).status().code(), Errc::corruption);
  EXPECT_NE(u.find(9), nullptr);  // a failed decode leaves the table alone
}

TEST(ProducerSnapshotFiles, LoadPicksNewestAtOrBelowTheLogEndAndDropsOthers) {
  TempDir dir;
  Env* env = default_env();
  ProducerStateTable t;
  t.apply(pb(1, 0, 0, 1), 0);
  ASSERT_TRUE(write_producer_snapshot(env, dir.path(), t, 10, /*keep=*/5).ok());
  t.apply(pb(1, 0, 1, 1), 10);
  ASSERT_TRUE(write_producer_snapshot(env, dir.path(), t, 20, 5).ok());
  ASSERT_TRUE(write_producer_snapshot(env, dir.path(), t, 30, 5).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.sub("00000000000000000020.snapshot")));

  ProducerStateTable loaded;
  auto got = load_producer_snapshot(env, dir.path(), /*max_offset=*/25, loaded);
  ASSERT_TRUE(got.ok());
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ(**got, 20);
  EXPECT_EQ(loaded.find(1)->last()->last_seq, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.sub("00000000000000000030.snapshot")));  // above
  // keep=2 prunes older snapshots.
  ASSERT_TRUE(write_producer_snapshot(env, dir.path(), t, 40, 2).ok());
  auto all = list_producer_snapshots(env, dir.path());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<int64_t>{20, 40}));
}

// --- through PartitionLog ---

LogConfig small_segments() {
  LogConfig c;
  c.segment_bytes = 400;  // a few batches per segment
  return c;
}

TEST(PartitionLogProducers, DuplicateIsAnsweredWithOriginalOffsetsAndNotAppended) {
  TempDir dir;
  auto log = PartitionLog::open(default_env(), dir.path(), LogConfig{}, 0);
  ASSERT_TRUE(log.ok());
  auto b0 = idem_batch(11, 0, 0, 3);
  auto b1 = idem_batch(11, 0, 3, 2);
  ASSERT_EQ((*log)->append(b0, 1)->base_offset, 0);
  ASSERT_EQ((*log)->append(b1, 1)->base_offset, 3);
  auto retry = idem_batch(11, 0, 0, 3);
  auto dup = (*log)->append(retry, 2);
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->producer_check, ProducerCheck::duplicate);
  EXPECT_EQ(dup->base_offset, 0);
  EXPECT_EQ(dup->last_offset, 2);
  EXPECT_EQ((*log)->log_end_offset(), 5);

  auto gap = idem_batch(11, 0, 9, 1);
  auto r = (*log)->append(gap, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->producer_check, ProducerCheck::out_of_order);
  EXPECT_EQ((*log)->log_end_offset(), 5);
  // Non-idempotent batches are unaffected.
  auto plain = testing::make_batch_n(2);
  EXPECT_EQ((*log)->append(plain, 4)->producer_check, ProducerCheck::ok);
  EXPECT_EQ((*log)->log_end_offset(), 7);
}

TEST(PartitionLogProducers, StateSurvivesCleanCloseViaSnapshot) {
  TempDir dir;
  {
    auto log = PartitionLog::open(default_env(), dir.path(), small_segments(), 0);
    ASSERT_TRUE(log.ok());
    for (int i = 0; i < 20; ++i) {
      auto b = idem_batch(21, 2, i * 2, 2);
      ASSERT_EQ((*log)->append(b, 1)->producer_check, ProducerCheck::ok);
    }
    ASSERT_GT((*log)->segment_base_offsets().size(), 2u);
    ASSERT_TRUE((*log)->close().ok());
  }
  auto log = PartitionLog::open(default_env(), dir.path(), small_segments(), 0);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->producer_snapshot_at_open().has_value());
  EXPECT_EQ(*(*log)->producer_snapshot_at_open(), 40);
  EXPECT_EQ((*log)->producer_batches_replayed_at_open(), 0);
  auto retry = idem_batch(21, 2, 36, 2);  // 19th batch: offsets 36..37
  auto dup = (*log)->append(retry, 2);
  EXPECT_EQ(dup->producer_check, ProducerCheck::duplicate);
  EXPECT_EQ(dup->base_offset, 36);
  auto stale = idem_batch(21, 1, 40, 1);
  EXPECT_EQ((*log)->append(stale, 2)->producer_check, ProducerCheck::stale_epoch);
  auto next = idem_batch(21, 2, 40, 1);
  EXPECT_EQ((*log)->append(next, 2)->base_offset, 40);
}

TEST(PartitionLogProducers, CrashRebuildsFromRollSnapshotPlusReplay) {
  TempDir dir;
  std::vector<int64_t> bases;
  {
    auto log = PartitionLog::open(default_env(), dir.path(), small_segments(), 0);
    ASSERT_TRUE(log.ok());
    for (int i = 0; i < 20; ++i) {
      auto b = idem_batch(31, 0, i * 2, 2);
      ASSERT_EQ((*log)->append(b, 1)->producer_check, ProducerCheck::ok);
    }
    bases = (*log)->segment_base_offsets();
    ASSERT_GT(bases.size(), 2u);
    // No close(): behaves like a crash (the OS kept the bytes).
  }
  auto log = PartitionLog::open(default_env(), dir.path(), small_segments(), 0);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->producer_snapshot_at_open().has_value());
  EXPECT_EQ(*(*log)->producer_snapshot_at_open(), bases.back());  // written at the last roll
  EXPECT_EQ((*log)->producer_batches_replayed_at_open(), (40 - bases.back()) / 2);
  for (int i = 15; i < 20; ++i) {  // every batch of the window is recognised
    auto retry = idem_batch(31, 0, i * 2, 2);
    auto r = (*log)->append(retry, 2);
    EXPECT_EQ(r->producer_check, ProducerCheck::duplicate) << i;
    EXPECT_EQ(r->base_offset, i * 2);
  }
  auto gap = idem_batch(31, 0, 41, 1);
  EXPECT_EQ((*log)->append(gap, 2)->producer_check, ProducerCheck::out_of_order);
  EXPECT_EQ((*log)->log_end_offset(), 40);
}

TEST(PartitionLogProducers, RebuildWithoutSnapshotsScansTheWholeLog) {
  TempDir dir;
  {
    auto log = PartitionLog::open(default_env(), dir.path(), small_segments(), 0);
    ASSERT_TRUE(log.ok());
    for (int i = 0; i < 12; ++i) {
      auto b = idem_batch(41 + i % 2, 0, (i / 2) * 3, 3);
      ASSERT_EQ((*log)->append(b, 1)->producer_check, ProducerCheck::ok);
    }
  }
  for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
    if (f.path().extension() == ".snapshot") std::filesystem::remove(f.path());
  }
  auto log = PartitionLog::open(default_env(), dir.path(), small_segments(), 0);
  ASSERT_TRUE(log.ok());
  EXPECT_FALSE((*log)->producer_snapshot_at_open().has_value());
  EXPECT_EQ((*log)->producer_batches_replayed_at_open(), 12);
  auto s41 = (*log)->producer_state(41);
  auto s42 = (*log)->producer_state(42);
  ASSERT_TRUE(s41 && s42);
  EXPECT_EQ(s41->last()->last_seq, 17);
  EXPECT_EQ(s42->last()->last_offset, 35);
  EXPECT_EQ((*log)->expire_producers(1000 + 86400000, 86400000), 2u);
  EXPECT_FALSE((*log)->producer_state(41).has_value());
}

}  // namespace
}  // namespace strata::storage
