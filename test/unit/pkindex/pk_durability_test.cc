// Durability of primary-key state (issue 5, engineer H2): checkpoints (tagging, pruning, leftovers,
// log first), recovery from a checkpoint when the state is ahead of a truncated log, offline when
// nothing qualifies, the retention bound, simulated power loss at each step through the storage
// FaultInjectionEnv (log), FaultInjectionFs (RocksDB) and flush_on_close=false (memtable), and TTL
// (read filter, compaction filter, replayed append times, expired key written again = insert).
// Every check compares lookups with a model the test computes from its own inputs and the surviving
// log end.
#include "test/unit/pkindex/durability_fixture.h"

namespace strata::pkindex {
namespace {

using namespace durability_testing;
using durability_testing::Write;  // not pkindex::Write (merge_engine.h)

// --- Checkpoints ---

TEST_F(DurabilityTest, CheckpointsAreTaggedLogFirstAndPruned) {
  options_.checkpoints_retained = 2;
  open_all();
  EXPECT_EQ(state_->newest_checkpoint().offset, -1);
  EXPECT_EQ(state_->retention_bound(), 0);  // nothing may go before the first checkpoint
  auto none = state_->create_checkpoint();  // nothing applied: no checkpoint
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->offset, -1);

  write({{"a", "1"}, {"b", "1"}, {"c", "1"}});
  EXPECT_LT(log_->recovery_point(), log_->log_end_offset());
  auto c1 = state_->create_checkpoint();
  ASSERT_TRUE(c1.ok()) << c1.status().to_string();
  EXPECT_EQ(c1->offset, 2);
  EXPECT_GT(c1->created_ms, 0);
  EXPECT_EQ(log_->recovery_point(), log_->log_end_offset());  // log fsynced first
  EXPECT_TRUE(fs::is_directory(dir() + "/kv-checkpoints/00000000000000000002"));
  EXPECT_EQ(state_->retention_bound(), 3);
  EXPECT_EQ(state_->persisted_applied_offset(), 2);
  // Nothing new: same checkpoint.
  EXPECT_EQ(state_->create_checkpoint()->offset, 2);

  write({{"a", "2"}});
  ASSERT_EQ(state_->create_checkpoint()->offset, 3);
  write({{"d", "1"}, {"b", std::nullopt}});
  ASSERT_EQ(state_->create_checkpoint()->offset, 5);
  EXPECT_EQ(state_->checkpoint_offsets(), (std::vector<int64_t>{3, 5}));  // oldest pruned
  EXPECT_EQ(state_->newest_checkpoint().offset, 5);
  EXPECT_EQ(state_->retention_bound(), 6);

  // A new write in the memtable does not move the bound; a flush moves the persisted offset only.
  write({{"e", "1"}});
  EXPECT_EQ(state_->persisted_applied_offset(), 5);
  ASSERT_TRUE(state_->flush().ok());
  EXPECT_EQ(state_->persisted_applied_offset(), 6);
  EXPECT_EQ(state_->retention_bound(), 6);  // still the checkpoint's
}

TEST_F(DurabilityTest, LeftoversOfAnInterruptedCheckpointOrRestoreAreRemovedAtOpen) {
  open_all();
  write({{"a", "1"}});
  ASSERT_EQ(state_->create_checkpoint()->offset, 0);
  write({{"a", "2"}});
  // Crash in the middle of the next checkpoint and of a restore: partial directories remain.
  fs::create_directories(dir() + "/kv-checkpoints/00000000000000000001.tmp");
  fs::copy(dir() + "/kv", dir() + "/kv-checkpoints/00000000000000000001.tmp",
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  fs::create_directories(dir() + "/kv.restore");
  ASSERT_TRUE(log_->flush().ok());
  crash();
  open_all();
  EXPECT_FALSE(fs::exists(dir() + "/kv-checkpoints/00000000000000000001.tmp"));
  EXPECT_FALSE(fs::exists(dir() + "/kv.restore"));
  EXPECT_EQ(state_->checkpoint_offsets(), (std::vector<int64_t>{0}));
  EXPECT_EQ(state_->newest_checkpoint().offset, 0);
  expect_matches_model({"a"});
}

// The log's fsync fails (the flush listener counts it) yet RocksDB persists: the state is ahead of
// the log after the power loss. The log start was moved past 0, so only a checkpoint can help.
TEST_F(DurabilityTest, StateAheadOfATruncatedLogIsRestoredFromTheNewestCheckpoint) {
  options_.flush_on_close = false;
  open_all();
  const auto keys = keys_k(8);
  write({{"k0", "a"}, {"k1", "a"}, {"k2", "a"}});
  write({{"k3", "a"}, {"k0", std::nullopt}});
  ASSERT_EQ(state_->create_checkpoint()->offset, 4);
  write({{"k1", "b"}, {"k4", "b"}});
  write({{"k5", "b"}, {"k3", std::nullopt}, {"k6", "b"}});
  ASSERT_TRUE(log_->flush().ok());                          // durable up to offset 9
  ASSERT_EQ(log_->advance_log_start_offset(5).ok(), true);  // e.g. DeleteRecords up to the bound
  fenv_.set_hook([](std::string_view op, const std::string&) {
    return op == "sync" ? Status(Errc::io_error, "disk gone") : Status::Ok();
  });
  write({{"k1", "c"}, {"k7", "c"}, {"k2", std::nullopt}});
  ASSERT_TRUE(state_->flush().ok());  // persists applied offset 12 though the log sync failed
  EXPECT_GE(state_->log_sync_failures(), 1u);
  crash();

  open_log();
  EXPECT_EQ(log_->log_end_offset(), 10);
  EXPECT_EQ(log_->log_start_offset(), 5);
  options_.flush_on_close = true;
  Status st = open_state();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(state_->restored_from_checkpoint(), 4);
  expect_matches_model(keys);
  // Writes continue: k1 is "b" again, so this is an update.
  auto out = write({{"k1", "d"}});
  EXPECT_EQ(out[0].kind, "update");
  EXPECT_EQ(state_->lookup(b("k1"))->value, "d");
}

TEST_F(DurabilityTest, StateAheadWithoutAQualifyingCheckpointGoesOffline) {
  options_.flush_on_close = false;
  open_all();
  write({{"k0", "a"}, {"k1", "a"}});
  write({{"k2", "a"}});
  ASSERT_TRUE(log_->flush().ok());
  ASSERT_TRUE(log_->advance_log_start_offset(2).ok());
  fenv_.set_hook([](std::string_view op, const std::string&) {
    return op == "sync" ? Status(Errc::io_error, "disk gone") : Status::Ok();
  });
  write({{"k1", "b"}});
  ASSERT_TRUE(state_->flush().ok());
  crash();
  open_log();
  Status st = open_state();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("offline"), std::string::npos) << st.to_string();
}

TEST_F(DurabilityTest, LogStartPastTheDurableStateUsesACheckpointOrGoesOffline) {
  open_all();
  write({{"k0", "a"}, {"k1", "a"}});
  ASSERT_EQ(state_->create_checkpoint()->offset, 1);
  write({{"k0", "b"}});
  write({{"k2", "c"}});
  ASSERT_TRUE(state_->close().ok());
  state_.reset();
  // Simulate a state that lost everything (kv wiped) while the log start moved to 2.
  fs::remove_all(dir() + "/kv");
  ASSERT_TRUE(log_->advance_log_start_offset(2).ok());
  ASSERT_TRUE(open_state().ok());
  EXPECT_EQ(state_->restored_from_checkpoint(), 1);
  expect_matches_model(keys_k(3));
  ASSERT_TRUE(state_->close().ok());
  state_.reset();
  fs::remove_all(dir() + "/kv");
  fs::remove_all(dir() + "/kv-checkpoints");
  EXPECT_FALSE(open_state().ok());
}

// A crash between the two renames of a restore (kv moved to kv.old, kv.restore not yet renamed):
// the next open removes both leftovers, finds no state below the log start and restores again.
TEST_F(DurabilityTest, CrashBetweenTheRenamesOfARestoreRecoversAgain) {
  open_all();
  write({{"k0", "a"}, {"k1", "a"}});
  write({{"k2", "a"}});
  ASSERT_EQ(state_->create_checkpoint()->offset, 2);
  write({{"k0", "b"}, {"k3", "b"}});
  ASSERT_TRUE(state_->close().ok());
  state_.reset();
  ASSERT_TRUE(log_->advance_log_start_offset(3).ok());
  fs::rename(dir() + "/kv", dir() + "/kv.old");
  fs::create_directories(dir() + "/kv.restore");
  fs::copy(checkpoint::dir_of(dir()) + "/" + checkpoint::name_of(2), dir() + "/kv.restore");
  ASSERT_TRUE(open_state().ok());
  EXPECT_EQ(state_->restored_from_checkpoint(), 2);
  EXPECT_FALSE(fs::exists(dir() + "/kv.old"));
  EXPECT_FALSE(fs::exists(dir() + "/kv.restore"));
  expect_matches_model(keys_k(4));
}

// Sizes and timings for docs/notes (printed, not asserted): checkpoint and restore of 100k rows.
TEST_F(DurabilityTest, CheckpointAndRestoreOf100kRows) {
  options_.flush_on_close = false;
  open_all();
  std::vector<Write> ws;
  for (int i = 0; i < 100000; ++i) {
    ws.push_back({cat("key-", i), std::string(100, 'v')});
    if (ws.size() == 500) {
      write(ws);
      ws.clear();
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  auto c = state_->create_checkpoint();
  auto t1 = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->offset, 99999);
  // State ahead of a log whose start moved: only the checkpoint can rebuild it.
  write({{"key-1", "late"}});
  ASSERT_TRUE(log_->flush().ok());
  ASSERT_TRUE(log_->advance_log_start_offset(100000).ok());
  fenv_.set_hook([](std::string_view op, const std::string&) {
    return op == "sync" ? Status(Errc::io_error, "disk gone") : Status::Ok();
  });
  write({{"key-2", "lost"}});
  ASSERT_TRUE(state_->flush().ok());
  crash();
  open_log();
  auto t2 = std::chrono::steady_clock::now();
  ASSERT_TRUE(open_state().ok());
  auto t3 = std::chrono::steady_clock::now();
  EXPECT_EQ(state_->restored_from_checkpoint(), 99999);
  EXPECT_EQ(state_->lookup(b("key-1"))->value, "late");
  EXPECT_EQ(state_->lookup(b("key-2"))->value, std::string(100, 'v'));
  EXPECT_EQ(state_->applied_offset(), 100000);
  auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::printf(
      "[measure] checkpoint of 100k rows (100 B values): %lld ms; restore+replay: %lld ms\n",
      static_cast<long long>(ms(t1 - t0)), static_cast<long long>(ms(t3 - t2)));
}

// --- Power loss at each step (randomised workloads, model from the test's own inputs) ---

enum class Step { log_append, log_fsync, memtable_flush, checkpoint_creation, after_checkpoint };

class PowerLoss : public DurabilityTest, public ::testing::WithParamInterface<Step> {};

TEST_P(PowerLoss, StateNeverAheadOfTheLogAndEqualsTheSurvivingLog) {
  const Step step = GetParam();
  const auto keys = keys_k(25);
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(cat("seed ", seed));
    history_.clear();
    state_.reset();
    log_.reset();
    dir_name_ = cat("seed-", seed);
    options_.flush_on_close = false;
    open_all();
    std::mt19937 rng(seed);
    auto batch = [&] {
      std::vector<Write> ws;
      const int n = 1 + static_cast<int>(rng() % 5);
      for (int i = 0; i < n; ++i) {
        std::string k = keys[rng() % keys.size()];
        if (rng() % 4 == 0) {
          ws.push_back({k, std::nullopt});
        } else {
          ws.push_back({k, cat("v", rng() % 1000)});
        }
      }
      return ws;
    };
    for (int i = 0; i < 12; ++i) write(batch());
    // A durable baseline: log fsynced, memtable flushed (and a checkpoint for the checkpoint
    // steps).
    ASSERT_TRUE(state_->flush().ok());
    if (step == Step::checkpoint_creation || step == Step::after_checkpoint) {
      ASSERT_TRUE(state_->create_checkpoint().ok());
    }
    const int64_t durable_end = log_->log_end_offset();
    for (int i = 0; i < 12; ++i) write(batch());
    const int64_t full_end = log_->log_end_offset();
    switch (step) {
      case Step::log_append:
        break;  // the second half was never fsynced
      case Step::log_fsync:
        ASSERT_TRUE(log_->flush().ok());
        break;
      case Step::memtable_flush:
        ASSERT_TRUE(state_->flush().ok());
        break;
      case Step::checkpoint_creation: {
        // The crash hits between checkpoint steps: the tmp copy exists, the rename never happened.
        ASSERT_TRUE(log_->flush().ok());
        const std::string tmp =
            checkpoint::dir_of(dir()) + "/" + checkpoint::name_of(full_end - 1) + ".tmp";
        fs::create_directories(tmp);
        fs::copy(dir() + "/kv", tmp, fs::copy_options::recursive);
        break;
      }
      case Step::after_checkpoint:
        ASSERT_TRUE(state_->create_checkpoint().ok());
        break;
    }
    crash();
    options_.flush_on_close = true;
    open_all();
    const int64_t end = log_->log_end_offset();
    EXPECT_EQ(end, step == Step::log_append ? durable_end : full_end);
    expect_matches_model(keys);
    for (int64_t o : state_->checkpoint_offsets()) EXPECT_LT(o, end);
  }
}

INSTANTIATE_TEST_SUITE_P(Steps, PowerLoss,
                         ::testing::Values(Step::log_append, Step::log_fsync, Step::memtable_flush,
                                           Step::checkpoint_creation, Step::after_checkpoint));

// --- TTL ---

class TtlTest : public DurabilityTest {
 protected:
  void SetUp() override {
    options_.table.ttl_ms = 3000;
    options_.clock = [this] { return now_.load(); };
  }
  std::atomic<int64_t> now_{1'000'000};
};

TEST_F(TtlTest, RowsExpireAtAppendTimePlusTtlOnEveryReadPath) {
  open_all();
  auto out = write({{"a", "1"}, {"ab", "1"}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].append_time, 1'000'000);  // the broker's append time travels in the changelog
  now_ = 1'002'000;
  write({{"ac", "2"}});
  now_ = 1'002'999;
  EXPECT_TRUE(state_->lookup(b("a"))->found);
  EXPECT_EQ(state_->prefix_lookup(b("a"), std::nullopt, 10)->rows.size(), 3u);
  now_ = 1'003'000;  // t + ttl: gone
  EXPECT_FALSE(state_->lookup(b("a"))->found);
  EXPECT_FALSE(state_->lookup(b("ab"))->found);
  EXPECT_TRUE(state_->lookup(b("ac"))->found);
  auto page = state_->prefix_lookup(b("a"), std::nullopt, 10);
  ASSERT_EQ(page->rows.size(), 1u);
  EXPECT_EQ(page->rows[0].key, "ac");
  // Expiry wrote nothing to the changelog.
  EXPECT_EQ(log_->log_end_offset(), 3);
  // Writing an expired key again is an insert with no before-image; deleting one is a no-op.
  out = write({{"a", "3"}, {"ab", std::nullopt}});
  EXPECT_EQ(out[0].kind, "insert");
  EXPECT_FALSE(out[0].has_before);
  EXPECT_EQ(out[1].kind, "none");
  EXPECT_EQ(state_->lookup(b("a"))->value, "3");
}

TEST_F(TtlTest, OverlayRowsExpireToo) {
  open_all();
  // compute a batch but do not apply it yet: the next compute sees it in the overlay.
  protocol::RecordBatchBuilder bb;
  bb.add(1, b("x"), b(std::string("1")), {});
  auto input = bb.build();
  auto first = testing::write_through(*state_, *log_, input, 1, codec::Compression::none, true);
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(state_->overlay_size(), 1u);  // held: only the overlay has the row
  now_ += 3000;
  auto second = testing::write_through(*state_, *log_, input, 1, codec::Compression::none, true);
  ASSERT_TRUE(second.ok());
  protocol::RecordBatchView v(second.batch);
  auto r = protocol::RecordReader::open(v);
  protocol::Record rec;
  ASSERT_TRUE(*r->next(rec));
  auto it = rec.headers();
  Header h;
  std::string kind;
  while (it.next(h)) {
    if (h.key == kChangeHeader) kind = str(*h.value);
  }
  EXPECT_EQ(kind, "insert");  // the overlay row had expired
  ASSERT_TRUE(state_->apply_at(second.result.appended.last_offset).ok());
  EXPECT_EQ(state_->overlay_size(), 0u);
}

TEST_F(TtlTest, ReplayReproducesAppendTimesAndCompactionDropsExpiredRows) {
  options_.flush_on_close = false;
  open_all();
  for (int i = 0; i < 50; ++i) write({{cat("old", i), "x"}});
  now_ = 1'002'000;
  for (int i = 0; i < 10; ++i) write({{cat("new", i), "y"}});
  ASSERT_TRUE(log_->flush().ok());
  crash();  // memtable lost: the rows come back from the log with their logged append times
  now_ = 1'004'000;  // replaying later must not refresh the clocks
  options_.flush_on_close = true;
  open_all();
  EXPECT_FALSE(state_->lookup(b("old0"))->found);
  EXPECT_TRUE(state_->lookup(b("new0"))->found);
  EXPECT_EQ(state_->lookup(b("new0"))->offset, 50);
  ASSERT_TRUE(state_->flush().ok());
  EXPECT_GE(state_->estimate_rows(), 60u);
  ASSERT_TRUE(state_->compact().ok());
  EXPECT_EQ(state_->estimate_rows(), 10u);
  // Physically gone: even with the clock turned back the rows are not there.
  now_ = 1'000'000;
  EXPECT_FALSE(state_->lookup(b("old0"))->found);
  EXPECT_TRUE(state_->lookup(b("new9"))->found);
  EXPECT_EQ(log_->log_end_offset(), 60);  // no changelog records for expiry
  now_ = 1'005'000;
  EXPECT_FALSE(state_->lookup(b("new9"))->found);
}

TEST(RowFormatTtl, RowsWithAndWithoutAppendTimeDecode) {
  std::string old_row, ttl_row;
  row_format::encode_row(old_row, 7, 111, std::nullopt, b(std::string("v")));
  row_format::encode_row(ttl_row, 8, 222, int64_t{5}, b(std::string("w")), int64_t{333});
  auto o = row_format::decode_row(b(old_row));
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->append_time);
  EXPECT_EQ(o->ttl_clock(), 111);  // rows from before TTL: their record timestamp
  EXPECT_EQ(str(o->value), "v");
  auto t = row_format::decode_row(b(ttl_row));
  ASSERT_TRUE(t);
  EXPECT_EQ(t->version, 5);
  EXPECT_EQ(t->append_time, 333);
  EXPECT_EQ(t->ttl_clock(), 333);
  EXPECT_EQ(str(t->value), "w");
  EXPECT_FALSE(row_format::decode_row(b(ttl_row.substr(0, 30))));  // truncated field
}

TEST(TableConfigSnapshot, IntervalParsedAndValidated) {
  std::map<std::string, std::string> c{{"table.type", "primary-key"}};
  EXPECT_EQ(parse_table_config(c)->snapshot_interval_ms, kDefaultSnapshotIntervalMs);
  c["table.kv.snapshot.interval.ms"] = "1500";
  EXPECT_EQ(parse_table_config(c)->snapshot_interval_ms, 1500);
  EXPECT_NE(check_table_key(kSnapshotIntervalMs, "0"), "");
  EXPECT_NE(check_table_key(kSnapshotIntervalMs, "x"), "");
  EXPECT_EQ(check_table_key(kSnapshotIntervalMs, "100"), "");
}

}  // namespace
}  // namespace strata::pkindex

namespace strata::pkindex {
namespace {

using namespace durability_testing;
using durability_testing::Write;  // not pkindex::Write (merge_engine.h)

// A new replica's state from a checkpoint copied file by file in small chunks (as the leader
// serves it): an unfinished copy is invisible and removed at open, the finished one restores the
// state; names with a path are refused.
TEST_F(DurabilityTest, CheckpointCopiedFileByFileRestoresAStateBehindItsLog) {
  open_all();
  write({{"k0", "a"}, {"k1", "a"}});
  ASSERT_EQ(state_->create_checkpoint()->offset, 1);
  write({{"k0", "b"}});
  write({{"k2", "c"}});
  ASSERT_TRUE(state_->close().ok());
  state_.reset();
  // The "leader's" checkpoint moves to a source partition dir; this one loses its state.
  const std::string src = dir() + "-src";
  fs::remove_all(src);
  fs::create_directories(checkpoint::dir_of(src));
  fs::rename(checkpoint::dir_of(dir()) + "/" + checkpoint::name_of(1),
             checkpoint::dir_of(src) + "/" + checkpoint::name_of(1));
  fs::remove_all(dir() + "/kv");
  ASSERT_TRUE(log_->advance_log_start_offset(2).ok());

  auto files = checkpoint::files(src, 1);
  ASSERT_TRUE(files.ok()) << files.status().to_string();
  ASSERT_FALSE(files->empty());
  EXPECT_EQ(checkpoint::files(src, 7).status().code(), Errc::not_found);
  EXPECT_EQ(checkpoint::read_chunk(src, 1, "../x", 0, 10).status().code(), Errc::invalid_argument);
  ASSERT_TRUE(checkpoint::install_begin(dir(), 1).ok());
  EXPECT_TRUE(checkpoint::install_append(dir(), 1, "a/b", "x").code() == Errc::invalid_argument);
  for (const auto& f : *files) {
    int64_t pos = 0;
    ASSERT_TRUE(checkpoint::install_append(dir(), 1, f.name, {}).ok());
    while (pos < f.size) {
      auto chunk = checkpoint::read_chunk(src, 1, f.name, pos, 7);
      ASSERT_TRUE(chunk.ok()) << chunk.status().to_string();
      ASSERT_FALSE(chunk->empty());
      ASSERT_TRUE(checkpoint::install_append(dir(), 1, f.name, *chunk).ok());
      pos += static_cast<int64_t>(chunk->size());
    }
    EXPECT_TRUE(checkpoint::read_chunk(src, 1, f.name, pos, 7)->empty()) << "at its end";
  }
  EXPECT_TRUE(checkpoint::list(dir())->empty()) << "not visible before the commit";
  ASSERT_TRUE(checkpoint::install_commit(dir(), 1).ok());
  ASSERT_EQ(*checkpoint::list(dir()), std::vector<int64_t>{1});
  auto copied = checkpoint::files(dir(), 1);
  ASSERT_TRUE(copied.ok());
  ASSERT_EQ(copied->size(), files->size());
  for (size_t i = 0; i < files->size(); ++i) {
    EXPECT_EQ((*copied)[i].name, (*files)[i].name);
    EXPECT_EQ((*copied)[i].size, (*files)[i].size);
  }
  // A second, unfinished copy lying around is not a checkpoint and goes at open.
  ASSERT_TRUE(checkpoint::install_begin(dir(), 3).ok());
  ASSERT_TRUE(checkpoint::install_append(dir(), 3, "CURRENT", "half").ok());
  ASSERT_TRUE(open_state().ok());
  EXPECT_EQ(state_->restored_from_checkpoint(), 1);
  expect_matches_model(keys_k(3));
  EXPECT_FALSE(fs::exists(checkpoint::dir_of(dir()) + "/" + checkpoint::name_of(3) + ".tmp"));
  fs::remove_all(src);
}

}  // namespace
}  // namespace strata::pkindex
