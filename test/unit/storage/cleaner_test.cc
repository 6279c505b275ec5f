// Log compaction: latest value per key kept at its original offset, tombstones dropped after the
// delete horizon, producer fields preserved (emptied last batch of a producer kept), dirty ratio /
// compaction lag / owner bound honoured, reads across a swap stay valid, the I/O throttle, and a
// crash at every step of a pass (write, fsync, rename, delete) leaves a complete, readable log.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "storage/cleaner/segment_swap.h"
#include "storage/cleaner/throttler.h"
#include "storage/file_names.h"
#include "storage/log_cleaner.h"
#include "storage/partition_log.h"
#include "test/unit/storage/compaction_util.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

LogConfig small_segments(int64_t bytes = 2048) {
  LogConfig c;
  c.segment_bytes = bytes;
  c.index_interval_bytes = 256;
  return c;
}

CleanerPolicy policy(int64_t delete_retention_ms = 1000) {
  CleanerPolicy p;
  p.min_cleanable_ratio = 0.5;
  p.delete_retention_ms = delete_retention_ms;
  return p;
}

// `updates` writes over `keys` keys in batches of 5, then one extra batch so the last update
// batch is in a sealed segment; returns the key -> latest value map over the cleanable part.
void write_updates(PartitionLog& log, int updates, int keys, uint32_t seed = 1,
                   codec::Compression c = codec::Compression::none) {
  std::mt19937 rng(seed);
  std::vector<KV> batch;
  for (int i = 0; i < updates; ++i) {
    int k = static_cast<int>(rng() % static_cast<uint32_t>(keys));
    batch.push_back({"key-" + std::to_string(k), "value-" + std::to_string(i), 1000 + i});
    if (batch.size() == 5) {
      append_kv(log, batch, {}, c);
      batch.clear();
    }
  }
  if (!batch.empty()) append_kv(log, batch, {}, c);
}

void roll_away(PartitionLog& log) {
  // Fill the active segment until it rolls, so everything written so far is cleanable.
  const size_t n = log.segment_base_offsets().size();
  while (log.segment_base_offsets().size() == n) {
    append_kv(log, {{"filler", std::string(200, 'f'), 1}});
  }
}

// Checks compaction's contract against the pre-clean records: every surviving record is the
// original record at that offset; within [start, uncleanable) exactly the latest per key survives
// (minus tombstones if `tombstones_gone`); everything at or above `uncleanable` is untouched.
void expect_compacted(const std::vector<StoredRecord>& before,
                      const std::vector<StoredRecord>& after, int64_t uncleanable,
                      bool tombstones_gone) {
  std::map<int64_t, StoredRecord> orig;
  for (const auto& r : before) orig.emplace(r.offset, r);
  std::map<std::string, int64_t> latest;
  for (const auto& r : before) {
    if (r.offset < uncleanable && r.key) latest[*r.key] = r.offset;
  }
  std::set<int64_t> expected;
  for (const auto& r : before) {
    if (r.offset >= uncleanable) {
      expected.insert(r.offset);
    } else if (r.key && latest[*r.key] == r.offset && !(tombstones_gone && !r.value)) {
      expected.insert(r.offset);
    }
  }
  std::set<int64_t> got;
  for (const auto& r : after) {
    got.insert(r.offset);
    auto it = orig.find(r.offset);
    ASSERT_NE(it, orig.end()) << r.offset;
    EXPECT_EQ(r.key, it->second.key);
    EXPECT_EQ(r.value, it->second.value);
    EXPECT_EQ(r.timestamp, it->second.timestamp);
  }
  EXPECT_EQ(got, expected);
}

// The batch summaries (.stats) of a cleaned segment describe its new batches: one per batch,
// made by the log's summarizer (here: the batch's record count).
TEST(Cleaner, RewritesTheBatchSummariesOfCleanedSegments) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  log->set_batch_summarizer(std::make_shared<const BatchSummarizer>(
      [](std::span<const uint8_t> batch) -> std::optional<std::string> {
        return std::to_string(protocol::RecordBatchView(batch).record_count());
      }));
  write_updates(*log, 600, 20, 3);
  roll_away(*log);
  LogCleaner cleaner;
  auto out = cleaner.clean(*log, policy(), 5000);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_GT(out->segments_rewritten, 0);
  const auto bases = log->segment_base_offsets();
  for (size_t i = 0; i + 1 < bases.size(); ++i) {
    SCOPED_TRACE("segment " + std::to_string(bases[i]));
    auto s =
        log->batch_summaries(std::max(bases[i], log->log_start_offset()), log->high_watermark());
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    // Every batch of the segment has its entry, and the entry is that batch's.
    auto read = log->read(bases[i], 1 << 20, true, bases[i + 1]);
    ASSERT_TRUE(read.ok());
    const auto batches = split_batches(read_bytes(*read));
    ASSERT_EQ(s->entries.size(), batches.size());
    for (size_t j = 0; j < batches.size(); ++j) {
      const auto& e = s->entries[j];
      EXPECT_TRUE(check_batch_summary(*s->file, e));
      EXPECT_EQ(e.base_offset, batches[j].base_offset());
      std::vector<uint8_t> bytes(e.size);
      ASSERT_TRUE(s->file->read(e.position, e.size, bytes.data()).ok());
      EXPECT_EQ(e.payload, std::to_string(protocol::RecordBatchView(bytes).record_count()));
    }
  }
  for (const auto& entry : std::filesystem::directory_iterator(tmp.sub("t-0"))) {
    EXPECT_FALSE(entry.path().string().ends_with(".cleaned")) << entry.path();
  }
}

TEST(Cleaner, KeepsLatestValuePerKeyAtOriginalOffsets) {
  for (auto codec : {codec::Compression::none, codec::Compression::lz4}) {
    TempDir tmp;
    auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
    write_updates(*log, 2000, 50, 7, codec);
    roll_away(*log);
    const auto before = dump_log(*log);
    const int64_t size_before = log->size_bytes();
    const int64_t leo = log->log_end_offset();
    const int64_t active_base = log->segment_base_offsets().back();

    LogCleaner cleaner;
    auto out = cleaner.clean(*log, policy(), 5000);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_TRUE(out->cleaned);
    EXPECT_GT(out->segments_rewritten, 0);
    EXPECT_EQ(out->range.first_uncleanable, active_base);
    EXPECT_LT(log->size_bytes(), size_before / 3);
    EXPECT_EQ(log->log_end_offset(), leo);
    EXPECT_EQ(log->log_start_offset(), 0);
    expect_compacted(before, dump_log(*log), active_base, false);

    // Nothing dirty any more: the next pass does nothing.
    auto again = cleaner.clean(*log, policy(), 5000);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(again->cleaned);
    EXPECT_FALSE(std::filesystem::exists(tmp.sub("t-0") + "/00000000000000000000.log.cleaned"));

    // Reopen (trusting the swapped files) and after an unclean stop (validating them).
    const auto compacted = dump_log(*log);
    ASSERT_TRUE(log->close().ok());
    log = open_log(default_env(), tmp.sub("t-0"), small_segments());
    EXPECT_EQ(dump_log(*log), compacted);
    log.reset();  // no close(): unclean
    std::filesystem::remove(tmp.sub("t-0") + "/recovery-point");
    log = open_log(default_env(), tmp.sub("t-0"), small_segments());
    EXPECT_EQ(dump_log(*log), compacted);
    EXPECT_EQ(log->log_end_offset(), leo);
  }
}

// Kafka's transactional rules: an aborted transaction's records never shadow an older committed
// value of their key and are removed; nothing at or past an open transaction's first offset (the
// last stable offset) is cleaned, so its records cannot shadow committed ones before it ends.
TEST(Cleaner, AbortedTransactionsAreRemovedAndOpenOnesBoundTheRange) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  auto txn_batch = [](int64_t pid, const std::string& key, const std::string& value) {
    protocol::RecordBatchBuilder b;
    b.set_producer(pid, 0, 0).set_transactional(true);
    b.add(1000, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(key.data()), key.size()),
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(value.data()), value.size()));
    return b.build();
  };
  append_kv(*log, {{"a", "committed"}, {"b", "b0"}});
  auto aborted = txn_batch(5, "a", "aborted");
  ASSERT_TRUE(log->append(aborted, 0).ok());
  ASSERT_TRUE(log->append_marker(5, 0, 0, /*commit=*/false, 0).ok());
  roll_away(*log);
  const int64_t open_first = log->log_end_offset();
  auto open = txn_batch(6, "b", "open");
  ASSERT_TRUE(log->append(open, 0).ok());
  roll_away(*log);
  roll_away(*log);
  ASSERT_EQ(log->last_stable_offset(), open_first);

  LogCleaner cleaner;
  auto out = cleaner.clean(*log, policy(), 5000, /*force=*/true);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_LE(out->range.first_uncleanable, open_first);
  std::map<std::string, std::vector<std::string>> values;  // key -> surviving values, in order
  for (const auto& r : dump_log(*log)) {
    if (r.key && (*r.key == "a" || *r.key == "b")) values[*r.key].push_back(r.value.value_or(""));
  }
  EXPECT_EQ(values["a"], std::vector<std::string>{"committed"});
  EXPECT_EQ(values["b"], (std::vector<std::string>{"b0", "open"}));
}

TEST(Cleaner, TombstonesRemovedOnlyAfterTheDeleteHorizon) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  write_updates(*log, 500, 20);
  for (int k = 0; k < 5; ++k) append_kv(*log, {{"key-" + std::to_string(k), std::nullopt, 9000}});
  roll_away(*log);
  const auto before = dump_log(*log);
  const int64_t active_base = log->segment_base_offsets().back();

  LogCleaner cleaner;
  auto out = cleaner.clean(*log, policy(1000), 10000);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_TRUE(out->next_delete_horizon.has_value());
  EXPECT_EQ(*out->next_delete_horizon, 11000);
  auto mid = dump_log(*log);
  expect_compacted(before, mid, active_base, false);
  std::vector<StoredBatch> batches;
  dump_log(*log, &batches);
  int horizon_batches = 0;
  for (const auto& b : batches) horizon_batches += b.delete_horizon;
  EXPECT_EQ(horizon_batches, 5);

  // Before the horizon nothing is due; after it, the pass runs and drops the tombstones.
  out = cleaner.clean(*log, policy(1000), 10999);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->cleaned);
  out = cleaner.clean(*log, policy(1000), 11000);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->cleaned);
  EXPECT_EQ(out->tombstones_removed, 5);
  EXPECT_FALSE(out->next_delete_horizon.has_value());
  auto after = dump_log(*log);
  expect_compacted(before, after, active_base, true);
  for (const auto& r : after) EXPECT_TRUE(r.value.has_value());
}

TEST(Cleaner, PreservesProducerFieldsAndKeepsAProducersLastBatch) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments(100000));
  // Producer 7: batch A (k1,k2), batch B (k1); producer 8: batch C (k2) overwritten by D (pid -1).
  append_kv(*log, {{"k1", "a1"}, {"k2", "a2"}}, {7, 3, 10});
  append_kv(*log, {{"k1", "b1"}}, {7, 3, 12});
  append_kv(*log, {{"k3", "c3"}}, {8, 0, 0});
  append_kv(*log, {{"k3", "d3"}, {"k2", "d2"}});  // makes A and C empty
  append_kv(*log, {{"k4", "e4"}}, {9, 1, 5});
  roll_away(*log);
  LogCleaner cleaner;
  auto out = cleaner.clean(*log, policy(), 5000, /*force=*/true);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  std::vector<StoredBatch> batches;
  auto recs = dump_log(*log, &batches);
  // A (offsets 0-1) is emptied and not producer 7's last: dropped. B kept as is. C (offset 3)
  // emptied but producer 8's last batch: kept empty with its offsets and producer fields.
  ASSERT_GE(batches.size(), 4u);
  EXPECT_EQ(batches[0].base_offset, 2);
  EXPECT_EQ(batches[0].producer_id, 7);
  EXPECT_EQ(batches[0].base_sequence, 12);
  EXPECT_EQ(batches[1].base_offset, 3);
  EXPECT_EQ(batches[1].last_offset, 3);
  EXPECT_EQ(batches[1].record_count, 0);
  EXPECT_EQ(batches[1].producer_id, 8);
  EXPECT_EQ(batches[1].producer_epoch, 0);
  EXPECT_EQ(batches[1].base_sequence, 0);
  EXPECT_EQ(batches[2].base_offset, 4);
  EXPECT_EQ(batches[2].last_offset, 5);
  EXPECT_EQ(batches[3].producer_id, 9);
  EXPECT_EQ(batches[3].base_sequence, 5);
  EXPECT_EQ(out->empty_batches_kept, 1);
}

TEST(Cleaner, PartialBatchKeepsBaseAndLastOffsetAndSequence) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments(100000));
  append_kv(*log, {{"a", "1"}, {"b", "1"}, {"c", "1"}}, {5, 2, 40});
  append_kv(*log, {{"a", "2"}, {"c", "2"}});
  roll_away(*log);
  LogCleaner cleaner;
  ASSERT_TRUE(cleaner.clean(*log, policy(), 5000, true).ok());
  std::vector<StoredBatch> batches;
  auto recs = dump_log(*log, &batches);
  ASSERT_GE(batches.size(), 2u);
  EXPECT_EQ(batches[0].base_offset, 0);  // the first record (a@0) is gone, the base stays
  EXPECT_EQ(batches[0].last_offset, 2);  // c@2 gone too, lastOffsetDelta kept
  EXPECT_EQ(batches[0].record_count, 1);
  EXPECT_EQ(batches[0].producer_id, 5);
  EXPECT_EQ(batches[0].producer_epoch, 2);
  EXPECT_EQ(batches[0].base_sequence, 40);
  EXPECT_EQ(recs[0].offset, 1);
  EXPECT_EQ(recs[0].key, "b");
  // A consumer fetching from offset 0 or 2 gets the batch holding b@1 / the next one.
  EXPECT_TRUE(log->read(2, 1 << 20, true, log->high_watermark()).ok());
}

TEST(Cleaner, DirtyRatioLagAndBoundLimitTheCleanableRange) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  write_updates(*log, 2000, 300);
  roll_away(*log);
  LogCleaner cleaner;
  CleanerPolicy p = policy();
  // Everything was written with timestamps 1000..2000: a lag of 10 s at now=5000 blocks all.
  p.min_compaction_lag_ms = 10000;
  auto r = LogCleaner::cleanable_range(*log, p, 5000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->dirty_bytes, 0);
  auto out = cleaner.clean(*log, p, 5000);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->cleaned);

  // The owner's bound stops the cleaner at the segment holding it.
  const auto bases = log->segment_base_offsets();
  ASSERT_GE(bases.size(), 4u);
  const int64_t bound = bases[2] + 1;
  log->set_retention_bound([bound] { return bound; });
  const auto before = dump_log(*log);
  out = cleaner.clean(*log, policy(), 5000);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->cleaned);
  EXPECT_EQ(out->range.first_uncleanable, bases[2]);
  expect_compacted(before, dump_log(*log), bases[2], false);

  // Lift the bound: the rest is dirty (ratio > 0.5) and gets cleaned.
  log->set_retention_bound({});
  r = LogCleaner::cleanable_range(*log, policy(), 5000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->first_dirty, bases[2]);
  EXPECT_GT(r->dirty_ratio(), 0.5);
  out = cleaner.clean(*log, policy(), 5000);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->cleaned);
  expect_compacted(before, dump_log(*log), bases.back(), false);

  // Few new updates: below the ratio, nothing happens.
  write_updates(*log, 10, 20, 99);
  roll_away(*log);
  r = LogCleaner::cleanable_range(*log, policy(), 5000);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->dirty_bytes, 0);
  EXPECT_LT(r->dirty_ratio(), 0.5);
  out = cleaner.clean(*log, policy(), 5000);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->cleaned);
}

TEST(Cleaner, ReadsTakenBeforeASwapStayValid) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"), small_segments());
  write_updates(*log, 500, 10);
  roll_away(*log);
  auto held = log->read(0, 1 << 20, true, log->high_watermark());
  ASSERT_TRUE(held.ok());
  const auto expected = read_bytes(*held);
  LogCleaner cleaner;
  ASSERT_TRUE(cleaner.clean(*log, policy(), 5000).ok());
  // The held file ranges still read the old bytes (the unlinked files stay open).
  EXPECT_EQ(read_bytes(*held), expected);
  EXPECT_FALSE(split_batches(read_bytes(*held)).empty());
}

TEST(Cleaner, ThrottlerSleepsToHoldTheRate) {
  std::chrono::nanoseconds total{0};
  cleaner::Throttler t(1e6, [&total](std::chrono::nanoseconds d) { total += d; });
  for (int i = 0; i < 100; ++i) t.maybe_throttle(20000);  // 2 MB at 1 MB/s
  EXPECT_GT(total, std::chrono::milliseconds(1500));
  EXPECT_LT(total, std::chrono::milliseconds(2100));
  cleaner::Throttler off(0, [](std::chrono::nanoseconds) { FAIL(); });
  off.maybe_throttle(1u << 30);
}

// A crash (every mutating op failing from the n-th on, then power loss) at each step of a pass:
// writing the .cleaned files, their fsyncs, the renames, the checkpoint. After reopening, the log
// must be complete: same log end, every record the original one at its offset, the latest value of
// every key present; and a new pass completes the compaction.
TEST(Cleaner, CrashAtEveryStep) {
  bool completed = false;
  for (int n = 0; n < 200 && !completed; ++n) {
    SCOPED_TRACE("crash after op " + std::to_string(n));
    TempDir tmp;
    FaultInjectionEnv env;
    const std::string dir = tmp.sub("t-0");
    std::vector<StoredRecord> before;
    int64_t leo = 0, active_base = 0;
    {
      auto log = open_log(&env, dir, small_segments());
      write_updates(*log, 150, 10);
      for (int k = 0; k < 3; ++k)
        append_kv(*log, {{"key-" + std::to_string(k), std::nullopt, 9000}});
      roll_away(*log);
      ASSERT_TRUE(log->flush().ok());
      before = dump_log(*log);
      leo = log->log_end_offset();
      active_base = log->segment_base_offsets().back();
      LogCleaner cleaner;
      env.fail_after(n);
      auto out = cleaner.clean(*log, policy(), 5000);
      env.clear_faults();
      completed = out.ok() && out->cleaned;
    }
    ASSERT_TRUE(env.drop_unsynced_data().ok());
    auto log = open_log(&env, dir, small_segments());
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->log_end_offset(), leo);
    auto after = dump_log(*log);
    // Complete: the latest record of every key survives, everything is an original record.
    auto want = latest_by_key(before);
    auto got = latest_by_key(after);
    EXPECT_EQ(got, want);
    std::map<int64_t, StoredRecord> orig;
    for (const auto& r : before) orig.emplace(r.offset, r);
    for (const auto& r : after) EXPECT_EQ(orig.at(r.offset), r);
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      EXPECT_FALSE(name.ends_with(".cleaned") || name.ends_with(".swap")) << name;
    }
    // A fresh pass finishes the job.
    LogCleaner cleaner;
    auto out = cleaner.clean(*log, policy(), 5000, /*force=*/true);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_compacted(before, dump_log(*log), active_base, false);
  }
  EXPECT_TRUE(completed);
}

// Named steps: stop right at the commit rename and right after it; recovery keeps or completes.
TEST(Cleaner, RecoveryCompletesACommittedSwapAndDiscardsAnUncommittedOne) {
  for (bool stop_after_commit : {false, true}) {
    TempDir tmp;
    FaultInjectionEnv env;
    const std::string dir = tmp.sub("t-0");
    std::vector<StoredRecord> before;
    int64_t active_base = 0;
    {
      auto log = open_log(&env, dir, small_segments());
      write_updates(*log, 300, 10);
      roll_away(*log);
      ASSERT_TRUE(log->flush().ok());
      before = dump_log(*log);
      active_base = log->segment_base_offsets().back();
      bool committed = false;
      env.set_hook([&](std::string_view op, const std::string& path) -> Status {
        if (op == "rename" && path.ends_with(".log.cleaned")) {  // path = the rename's source
          if (!stop_after_commit) return Status(Errc::io_error, "stop before commit");
          committed = true;
          return Status::Ok();
        }
        if (committed && op == "rename") return Status(Errc::io_error, "stop after commit");
        return Status::Ok();
      });
      LogCleaner cleaner;
      auto out = cleaner.clean(*log, policy(), 5000);
      EXPECT_FALSE(out.ok());
      env.set_hook({});
    }
    ASSERT_TRUE(env.drop_unsynced_data().ok());
    auto log = open_log(&env, dir, small_segments());
    auto after = dump_log(*log);
    if (stop_after_commit) {
      // The first segment's swap was durable: it is in place, the others untouched.
      EXPECT_LT(after.size(), before.size());
      EXPECT_EQ(latest_by_key(after), latest_by_key(before));
    } else {
      EXPECT_EQ(after, before);
    }
    LogCleaner cleaner;
    ASSERT_TRUE(cleaner.clean(*log, policy(), 5000, true).ok());
    expect_compacted(before, dump_log(*log), active_base, false);
  }
}

}  // namespace
}  // namespace strata::storage
