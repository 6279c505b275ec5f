// Primary-key state under power loss and disk errors that reach RocksDB's own files (through
// FaultInjectionFs, the PkEnvironment's file system in these tests) as well as the log: the
// fault model itself, random work cut by power losses, and a full disk under kv/.
#include "test/unit/pkindex/durability_fixture.h"

namespace strata::pkindex {
namespace {

using namespace durability_testing;
using durability_testing::Write;  // not pkindex::Write (merge_engine.h)

// --- RocksDB's files under power loss (FaultInjectionFs) ---

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The model itself: contents durable up to the last file sync, entry changes once their
// directory is fsynced; everything else goes back at a power loss.
TEST(FaultInjectionFs, PowerLossKeepsExactlyWhatWasMadeDurable) {
  storage::testing::TempDir tmp;
  auto ffs = std::make_shared<testing::FaultInjectionFs>(tmp.sub("trash"));
  rocksdb::FileSystem& rfs = *ffs;
  const std::string root = tmp.sub("root");
  fs::create_directories(root);
  { std::ofstream(root + "/old") << "before"; }  // pre-existing: durable
  auto write = [&](const std::string& path, const std::string& synced, const std::string& more) {
    std::unique_ptr<rocksdb::FSWritableFile> f;
    ASSERT_TRUE(rfs.NewWritableFile(path, rocksdb::FileOptions(), &f, nullptr).ok());
    ASSERT_TRUE(f->Append(synced, rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(f->Sync(rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(f->Append(more, rocksdb::IOOptions(), nullptr).ok());
    ASSERT_TRUE(f->Close(rocksdb::IOOptions(), nullptr).ok());
  };
  ASSERT_TRUE(files::create_dir(rfs, root + "/d").ok());
  write(root + "/d/kept", "abc", "def");
  ASSERT_TRUE(files::sync_dir(rfs, root + "/d").ok());  // kept's entry, but d itself is not durable
  write(root + "/durable", "123", "456");
  write(root + "/lost", "x", "y");
  ASSERT_TRUE(files::sync_dir(rfs, root).ok());  // durable, lost, and d are now entries for good
  ASSERT_TRUE(files::remove_all(rfs, root + "/lost").ok());
  ASSERT_TRUE(files::rename(rfs, root + "/durable", root + "/renamed").ok());
  ASSERT_TRUE(files::remove_all(rfs, root + "/old").ok());
  write(root + "/new", "n", "");
  ASSERT_TRUE(files::create_dir(rfs, root + "/d/sub").ok());
  EXPECT_FALSE(fs::exists(root + "/lost"));
  EXPECT_EQ(slurp(root + "/renamed"), "123456");
  EXPECT_GT(ffs->pending_count(), 0u);

  ASSERT_TRUE(ffs->drop_unsynced_data().ok());
  EXPECT_EQ(slurp(root + "/d/kept"), "abc");   // cut to its synced size
  EXPECT_EQ(slurp(root + "/durable"), "123");  // the rename was undone
  EXPECT_FALSE(fs::exists(root + "/renamed"));
  EXPECT_EQ(slurp(root + "/lost"), "x");  // the removal was undone, synced content back
  EXPECT_EQ(slurp(root + "/old"), "before");
  EXPECT_FALSE(fs::exists(root + "/new"));  // its creation never reached the directory
  EXPECT_FALSE(fs::exists(root + "/d/sub"));
  EXPECT_EQ(ffs->pending_count(), 0u);
  EXPECT_TRUE(fs::is_empty(tmp.sub("trash")));

  // Durable removals and renames stay; a sync fault syncs nothing.
  ASSERT_TRUE(files::remove_all(rfs, root + "/lost").ok());
  ASSERT_TRUE(files::rename(rfs, root + "/durable", root + "/renamed").ok());
  ASSERT_TRUE(files::sync_dir(rfs, root).ok());
  ffs->inject(testing::FsOp::sync, {EIO, 1, "/root"});
  EXPECT_FALSE(files::remove_all(rfs, root + "/old").ok() && files::sync_dir(rfs, root).ok());
  EXPECT_EQ(ffs->injected_count(), 1);
  ASSERT_TRUE(ffs->drop_unsynced_data().ok());
  EXPECT_FALSE(fs::exists(root + "/lost"));
  EXPECT_EQ(slurp(root + "/renamed"), "123");
  EXPECT_EQ(slurp(root + "/old"), "before");
}

// Random work on a PK partition — writes, memtable flushes, compactions, checkpoints, retention
// moving the log start to the state's bound, log fsyncs — cut by a power loss that reaches both
// the log and RocksDB's files, several times per seed. After each loss the state opens (never
// offline), is not ahead of the log, and equals the model of the surviving log.
TEST_F(DurabilityTest, RandomWorkCutByPowerLossRecoversTheSurvivingLog) {
  const auto keys = keys_k(30);
  int restored = 0;
  int past_zero = 0;
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE(cat("seed ", seed));
    history_.clear();
    dir_name_ = cat("random-", seed);
    options_.flush_on_close = false;
    options_.checkpoints_retained = 2;
    open_all();
    std::mt19937 rng(seed);
    for (int cycle = 0; cycle < 4; ++cycle) {
      SCOPED_TRACE(cat("cycle ", cycle));
      log_->set_retention_bound([s = state_.get()] { return s->retention_bound(); });
      const int ops = 10 + static_cast<int>(rng() % 40);
      for (int i = 0; i < ops; ++i) {
        const uint32_t r = rng() % 100;
        if (r < 70) {
          std::vector<Write> ws;
          const int n = 1 + static_cast<int>(rng() % 4);
          for (int j = 0; j < n; ++j) {
            const std::string& k = keys[rng() % keys.size()];
            if (rng() % 5 == 0) {
              ws.push_back({k, std::nullopt});
            } else {
              ws.push_back({k, cat("v", rng() % 10000)});
            }
          }
          write(ws);
        } else if (r < 78) {
          ASSERT_TRUE(state_->flush().ok());
        } else if (r < 82) {
          ASSERT_TRUE(state_->compact().ok());
        } else if (r < 90) {
          auto c = state_->create_checkpoint();
          ASSERT_TRUE(c.ok()) << c.status().to_string();
        } else if (r < 95) {
          auto moved = log_->delete_records_before(log_->log_end_offset());
          ASSERT_TRUE(moved.ok()) << moved.status().to_string();
        } else {
          ASSERT_TRUE(log_->flush().ok());
        }
      }
      log_->set_retention_bound(nullptr);
      crash();
      options_.flush_on_close = false;
      open_all();  // fails the test if the state went offline
      const int64_t end = log_->log_end_offset();
      history_.erase(history_.lower_bound(end), history_.end());  // lost: offsets are reused
      expect_matches_model(keys);
      for (int64_t o : state_->checkpoint_offsets()) EXPECT_LT(o, end);
      if (state_->restored_from_checkpoint() >= 0) ++restored;
      if (log_->log_start_offset() > 0) ++past_zero;
    }
    crash();
  }
  // The mix reached the paths it is for: logs whose start moved past 0 (only a checkpoint or the
  // persisted state can rebuild those).
  EXPECT_GT(past_zero, 0);
  RecordProperty("restored_from_checkpoint", restored);
}

// A full disk under kv/ (ENOSPC on RocksDB's SST writes): a memtable flush fails and RocksDB
// stops taking writes. Lookups keep being served, writes fail with an error the broker maps to
// KAFKA_STORAGE_ERROR, and once space is back the state heals itself (RocksDB resumed, the rows of
// the log it missed replayed) without a restart: nothing written to the log is lost.
TEST_F(DurabilityTest, FullDiskUnderKvRejectsWritesKeepsReadsAndHealsOnceSpaceIsBack) {
  open_all();
  const auto keys = keys_k(20);
  for (int i = 0; i < 20; ++i) write({{keys[static_cast<size_t>(i)], "a"}});
  // One upsert through the produce path; the model follows the log (a record the log took is in
  // the changelog even when the state could not apply it: replay brings it in).
  auto put = [&](const std::string& k, const std::string& v) {
    protocol::RecordBatchBuilder bb;
    bb.add(1000, b(k), b(v), {});
    auto input = bb.build();
    auto w = testing::write_through(*state_, *log_, input, 1);
    if (w.result.appended.base_offset >= 0 &&
        w.result.appended.producer_check == storage::ProducerCheck::ok) {
      history_[w.result.appended.base_offset] = {k, v};
    }
    return w;
  };
  ffs_->inject(testing::FsOp::write, {ENOSPC, -1, ".sst"});
  EXPECT_FALSE(state_->flush().ok());
  EXPECT_GT(ffs_->injected_count(), 0);
  int failed = 0;
  for (int i = 0; i < 10; ++i) {
    auto w = put(keys[static_cast<size_t>(i)], "full");
    if (!w.result.status.ok()) {
      ++failed;
      EXPECT_EQ(w.result.status.code(), Errc::io_error) << w.result.status.to_string();
    }
    auto r = state_->lookup(b(keys[15]));  // reads go on
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->value, "a");
  }
  EXPECT_GT(failed, 0) << "a full disk under kv/ must show up as failed writes";
  ffs_->clear_faults();
  // Space is back: a write heals the state (at most one attempt per retry interval) and succeeds.
  bool healed = false;
  for (int i = 0; i < 40 && !healed; ++i) {
    healed = put(keys[19], cat("back", i)).ok();
    if (!healed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(healed) << "the state did not come back after the disk had space again";
  ASSERT_TRUE(state_->flush().ok());
  expect_matches_model(keys);
}

}  // namespace
}  // namespace strata::pkindex
