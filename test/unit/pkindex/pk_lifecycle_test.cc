// PkState lifecycle under concurrency (review fixes, engineer FixB): reads racing close() get
// Errc::shutting_down instead of touching a freed RocksDB, checkpoint info and properties stay
// readable, a checkpoint directory name beyond INT64_MAX is ignored, and the retention bound holds
// at the offset X of a live Scan snapshot until it is released.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "pkindex/pk_checkpoint.h"
#include "pkindex/pk_scan.h"
#include "pkindex/pk_state.h"
#include "protocol/record/batch_builder.h"
#include "storage/partition_log.h"
#include "test/unit/pkindex/pk_write_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

namespace fs = std::filesystem;

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
// prefix + number (avoids a GCC 12 -Wrestrict false positive with operator+).
std::string cat(const char* prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}

class PkLifecycleTest : public ::testing::Test {
 protected:
  void open() {
    auto log = storage::PartitionLog::open(storage::default_env(), dir(), {}, 1);
    ASSERT_TRUE(log.ok()) << log.status().to_string();
    log_ = std::move(*log);
    auto s = PkState::open(env_, *log_, {});
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    state_ = std::move(*s);
  }
  std::string dir() const { return tmp_.sub("t-0"); }
  // One batch of upserts k<from>..k<from+n-1> = v; returns its base offset.
  int64_t write(int from, int n, const std::string& v) {
    protocol::RecordBatchBuilder bb;
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) keys.push_back(cat("k", from + i));
    for (const auto& k : keys) bb.add(1000, b(k), b(v), {});
    auto input = bb.build();
    auto w = testing::write_through(*state_, *log_, input, 1000);
    EXPECT_TRUE(w.ok()) << w.result.status.to_string();
    return w.result.appended.base_offset;
  }

  storage::testing::TempDir tmp_;
  PkEnvironment env_;
  std::unique_ptr<storage::PartitionLog> log_;
  std::unique_ptr<PkState> state_;
};

// Before the fix close() reset the RocksDB handle under running lookups (use-after-free; ASan
// and usually a plain build crash). Every read must either succeed with the real row or fail with
// shutting_down, and each reader must see the close.
TEST_F(PkLifecycleTest, ReadsRacingCloseFailWithShuttingDown) {
  open();
  for (int i = 0; i < 20; ++i) write(i * 50, 50, "v");
  ASSERT_TRUE(state_->create_checkpoint().ok());
  std::atomic<bool> go{false};
  std::atomic<int> bad{0};
  std::atomic<int> ok_reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      for (int i = 0;; ++i) {
        const std::string k = cat("k", (i * 7 + t) % 1000);
        auto r = state_->lookup(b(k));
        auto p = state_->prefix_lookup(b("k1"), std::nullopt, 20);
        (void)state_->estimate_rows();
        (void)state_->int_property("rocksdb.cur-size-all-mem-tables");
        EXPECT_EQ(state_->newest_checkpoint().offset, 999);
        if (r.ok()) {
          if (!r->found || r->value != "v") ++bad;
          ++ok_reads;
        } else if (r.status().code() != Errc::shutting_down) {
          ++bad;
        }
        if (!p.ok() && p.status().code() != Errc::shutting_down) ++bad;
        if (!r.ok() && !p.ok()) return;  // both saw the close
      }
    });
  }
  go = true;
  while (ok_reads.load() < 300) std::this_thread::yield();
  ASSERT_TRUE(state_->close().ok());
  for (auto& th : readers) th.join();
  EXPECT_EQ(bad.load(), 0);
  auto after = state_->lookup(b("k1"));
  ASSERT_FALSE(after.ok());
  EXPECT_EQ(after.status().code(), Errc::shutting_down);
  EXPECT_EQ(state_->int_property("rocksdb.cur-size-all-mem-tables"), std::nullopt);
  EXPECT_EQ(state_->estimate_rows(), 0u);
  EXPECT_EQ(state_->flush().code(), Errc::shutting_down);
  EXPECT_EQ(state_->create_checkpoint().status().code(), Errc::shutting_down);
  EXPECT_EQ(state_->newest_checkpoint().offset, 999);  // still readable after close
}

// close() waits for a running checkpoint (never frees RocksDB under it); writes and checkpoints
// after the close fail cleanly with shutting_down.
TEST_F(PkLifecycleTest, CloseDuringCheckpointsIsSafe) {
  open();
  write(0, 2000, "x");
  std::atomic<int> made{0};
  std::atomic<int> bad{0};
  std::thread ckpt([&] {
    for (int i = 0;; ++i) {
      {  // one more row, so every checkpoint has work (flush, CreateCheckpoint, read back)
        protocol::RecordBatchBuilder bb;
        const std::string k = cat("w", i);
        bb.add(1000, b(k), b(k), {});
        auto input = bb.build();
        auto w = testing::write_through(*state_, *log_, input, 1000);
        if (!w.result.status.ok()) {
          if (w.result.status.code() != Errc::shutting_down) ++bad;
          return;
        }
      }
      auto c = state_->create_checkpoint();
      if (!c.ok()) {
        if (c.status().code() != Errc::shutting_down) ++bad;
        return;
      }
      ++made;
    }
  });
  while (made.load() < 3) std::this_thread::yield();
  ASSERT_TRUE(state_->close().ok());
  ckpt.join();
  EXPECT_EQ(bad.load(), 0);
  const auto on_disk = state_->checkpoint_offsets();
  ASSERT_FALSE(on_disk.empty());
  EXPECT_EQ(on_disk.back(), state_->newest_checkpoint().offset);
  EXPECT_GE(on_disk.back(), 2002);  // 2000 rows + at least 3 written by the thread
}

// Each partition's RocksDB keeps a bounded number of files open (its OPTIONS file records what
// the DB was opened with; RocksDB's own default, -1, would keep every SST open).
TEST_F(PkLifecycleTest, RocksDbOpenFilesAreBounded) {
  open();
  bool found = false;
  for (const auto& e : fs::directory_iterator(dir() + "/kv")) {
    if (e.path().filename().string().rfind("OPTIONS-", 0) != 0) continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("max_open_files=") == std::string::npos) continue;
      EXPECT_NE(line.find("max_open_files=64"), std::string::npos) << line;
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(PkLifecycleTest, CheckpointNamesBeyondInt64AreIgnored) {
  fs::create_directories(dir() + "/kv-checkpoints/99999999999999999999");  // > INT64_MAX
  fs::create_directories(dir() + "/kv-checkpoints/-0000000000000000001");
  fs::create_directories(dir() + "/kv-checkpoints/0000000000000000001x");
  auto none = checkpoint::list(dir());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  open();  // used to throw std::out_of_range from std::stoll
  EXPECT_EQ(state_->newest_checkpoint().offset, -1);
  write(0, 3, "v");
  auto c = state_->create_checkpoint();  // lists (and prunes) the directory again
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->offset, 2);
  EXPECT_EQ(state_->checkpoint_offsets(), (std::vector<int64_t>{2}));
  EXPECT_TRUE(fs::exists(dir() + "/kv-checkpoints/99999999999999999999"));  // not ours: kept
}

// "Scan at X + ReadChangelog from X": while a snapshot at X is live, nothing at or above X may go.
TEST_F(PkLifecycleTest, RetentionBoundHoldsAtALiveScanSnapshot) {
  open();
  write(0, 3, "a");  // offsets 0..2
  ASSERT_EQ(state_->create_checkpoint()->offset, 2);
  EXPECT_EQ(state_->retention_bound(), 3);
  auto snap = state_->open_snapshot();
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ((*snap)->snapshot_offset(), 3);
  write(3, 4, "b");  // offsets 3..6
  ASSERT_EQ(state_->create_checkpoint()->offset, 6);
  EXPECT_EQ(state_->retention_bound(), 3);  // the snapshot's X, not the checkpoint's 7
  auto snap2 = state_->open_snapshot();
  ASSERT_TRUE(snap2.ok());
  EXPECT_EQ((*snap2)->snapshot_offset(), 7);
  snap->reset();  // the older scan ends
  EXPECT_EQ(state_->retention_bound(), 7);
  snap2->reset();
  EXPECT_EQ(state_->retention_bound(), 7);
  // DeleteRecords is clamped by the bound while a snapshot is live.
  write(7, 2, "c");  // offsets 7..8
  ASSERT_EQ(state_->create_checkpoint()->offset, 8);
  auto snap3 = state_->open_snapshot();
  ASSERT_TRUE(snap3.ok());
  log_->set_retention_bound([s = state_.get()] { return s->retention_bound(); });
  EXPECT_EQ(log_->retention_bound(), 9);
  write(9, 1, "d");
  ASSERT_EQ(state_->create_checkpoint()->offset, 9);
  EXPECT_EQ(log_->retention_bound(), 9);  // snap3 is at X = 9
  snap3->reset();
  EXPECT_EQ(log_->retention_bound(), 10);
  log_->set_retention_bound({});
}

}  // namespace
}  // namespace strata::pkindex
