// The transaction coordinator's state machine (broker/txn/txn_state.h): by example, and a model
// with several producer instances of one transactional id (zombies included) doing random
// InitProducerId / AddPartitions / EndTxn while markers complete and timeouts fire. Checked: epochs
// only grow, only the newest instance is ever served, every transaction ends with exactly one
// marker decision covering exactly its partitions, and a commit is never turned into an abort.
#include "broker/txn/txn_state.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace strata::broker::txn {
namespace {

TEST(TxnState, CommitAndAbortByExample) {
  TxnStateMachine m;
  auto init = m.init_producer_id(60000, 7, 0);
  ASSERT_EQ(init.error, TxnError::none);
  EXPECT_TRUE(init.persist);
  EXPECT_EQ(m.metadata().producer_id, 7);
  EXPECT_EQ(m.metadata().producer_epoch, 0);
  EXPECT_EQ(m.end_txn(7, 0, true).error, TxnError::invalid_txn_state) << "no transaction";
  ASSERT_EQ(m.add_partitions(7, 0, {{"a", 0}, {"b", 1}}, 10).error, TxnError::none);
  EXPECT_EQ(m.metadata().state, TxnState::ongoing);
  EXPECT_FALSE(m.add_partitions(7, 0, {{"a", 0}}, 11).persist) << "nothing new";
  auto end = m.end_txn(7, 0, true);
  ASSERT_EQ(end.error, TxnError::none);
  EXPECT_EQ(end.write_markers_commit, true);
  EXPECT_EQ(end.marker_partitions.size(), 2u);
  EXPECT_EQ(m.end_txn(7, 0, true).error, TxnError::concurrent_transactions) << "retry: wait";
  EXPECT_EQ(m.end_txn(7, 0, false).error, TxnError::invalid_txn_state);
  EXPECT_EQ(m.add_partitions(7, 0, {{"c", 0}}, 12).error, TxnError::concurrent_transactions);
  ASSERT_EQ(m.markers_written().error, TxnError::none);
  EXPECT_EQ(m.metadata().state, TxnState::complete_commit);
  EXPECT_EQ(m.end_txn(7, 0, true).error, TxnError::none) << "a retried EndTxn is idempotent";
  EXPECT_EQ(m.end_txn(7, 0, false).error, TxnError::invalid_txn_state);
  // The next transaction starts from the completed one.
  ASSERT_EQ(m.add_partitions(7, 0, {{"c", 0}}, 20).error, TxnError::none);
  EXPECT_EQ(m.metadata().partitions.size(), 1u);
}

TEST(TxnState, NewInstanceFencesTheOldAndAbortsItsTransaction) {
  TxnStateMachine m;
  m.init_producer_id(60000, 7, 0);
  m.add_partitions(7, 0, {{"a", 0}}, 1);
  auto takeover = m.init_producer_id(60000, 8, 2);
  EXPECT_EQ(takeover.error, TxnError::concurrent_transactions);
  EXPECT_EQ(takeover.write_markers_commit, false);
  EXPECT_EQ(m.metadata().producer_epoch, 1);
  EXPECT_EQ(m.end_txn(7, 0, true).error, TxnError::producer_fenced) << "the zombie";
  EXPECT_EQ(m.init_producer_id(60000, 8, 3).error, TxnError::concurrent_transactions);
  m.markers_written();
  auto again = m.init_producer_id(60000, 8, 4);
  ASSERT_EQ(again.error, TxnError::none);
  EXPECT_EQ(m.metadata().producer_id, 7) << "same id, higher epoch";
  EXPECT_EQ(m.metadata().producer_epoch, 2);
  EXPECT_EQ(m.init_producer_id(900001, 8, 5).error, TxnError::invalid_transaction_timeout);
}

TEST(TxnState, TimeoutAbortsAndFences) {
  TxnStateMachine m;
  m.init_producer_id(1000, 7, 0);
  m.add_partitions(7, 0, {{"a", 0}}, 100);
  EXPECT_FALSE(m.expire_if_timed_out(1100).write_markers_commit);
  auto expired = m.expire_if_timed_out(1101);
  EXPECT_EQ(expired.write_markers_commit, false);
  EXPECT_EQ(m.metadata().producer_epoch, 1);
  m.markers_written();
  EXPECT_EQ(m.end_txn(7, 0, true).error, TxnError::producer_fenced);
}

TEST(TxnStateModel, RandomInstancesZombiesMarkersAndTimeouts) {
  int all_transactions = 0, all_commits = 0, all_fenced = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    TxnStateMachine m;
    struct Instance {
      int64_t pid = -1;
      int16_t epoch = -1;
    };
    std::vector<Instance> instances;
    int16_t newest_epoch = -1;
    int newest = -1;  // index of the instance that holds newest_epoch
    int64_t now = 0;
    // The open transaction as the model sees it.
    std::set<TopicPartition> added;
    bool commit_requested = false, decided = false;
    std::optional<bool> pending_markers;
    int transactions = 0, commits = 0;
    auto decide = [&](const TxnOutcome& o) {
      if (!o.write_markers_commit) return;
      ASSERT_FALSE(decided) << "seed " << seed << ": a second marker decision";
      ASSERT_EQ(std::set<TopicPartition>(o.marker_partitions.begin(), o.marker_partitions.end()),
                added)
          << "seed " << seed;
      if (commit_requested) {
        ASSERT_TRUE(*o.write_markers_commit) << "seed " << seed;
      }
      decided = true;
      pending_markers = *o.write_markers_commit;
    };
    for (int step = 0; step < 300; ++step) {
      now += pick(400);
      const int what = pick(8);
      if (what == 0 || instances.empty()) {  // a new instance starts
        auto o = m.init_producer_id(1000, 100 + seed, now);
        decide(o);
        if (o.error == TxnError::none) {
          ASSERT_GT(m.metadata().producer_epoch, newest_epoch) << "seed " << seed;
          newest_epoch = m.metadata().producer_epoch;
          instances.push_back({m.metadata().producer_id, newest_epoch});
          newest = static_cast<int>(instances.size()) - 1;
          added.clear();
          commit_requested = decided = false;
        }
        continue;
      }
      const int k = pick(static_cast<int>(instances.size()));
      const auto& inst = instances[static_cast<size_t>(k)];
      if (what <= 3) {
        std::vector<TopicPartition> parts = {{"t", pick(4)}};
        const bool fresh = m.metadata().state != TxnState::ongoing;
        auto o = m.add_partitions(inst.pid, inst.epoch, parts, now);
        if (o.error == TxnError::none) {
          ASSERT_EQ(k, newest) << "seed " << seed << ": a fenced instance was served";
          if (fresh) {
            added.clear();
            commit_requested = decided = false;
            ++transactions;
          }
          added.insert(parts.begin(), parts.end());
        }
      } else if (what <= 5) {
        const bool commit = pick(2);
        const bool was_ongoing = m.metadata().state == TxnState::ongoing;
        auto o = m.end_txn(inst.pid, inst.epoch, commit);
        if (o.error == TxnError::none) {
          ASSERT_EQ(k, newest) << "seed " << seed;
        }
        if (o.error == TxnError::none && was_ongoing) {
          commit_requested = commit;
          decide(o);
        }
      } else if (what == 6 && pending_markers) {
        ASSERT_EQ(m.markers_written().error, TxnError::none);
        commits += *pending_markers;
        pending_markers.reset();
      } else {
        auto o = m.expire_if_timed_out(now);
        decide(o);
      }
      // The coordinator itself fenced the owner (a timeout, or a new instance's abort).
      if (m.metadata().producer_epoch > newest_epoch) {
        newest_epoch = m.metadata().producer_epoch;
        newest = -1;
        ++all_fenced;
      }
      ASSERT_FALSE(::testing::Test::HasFatalFailure());
    }
    all_transactions += transactions;
    all_commits += commits;
  }
  // The walk must reach commits, aborts and fencing, not just errors.
  EXPECT_GT(all_transactions, 1500);
  EXPECT_GT(all_commits, 300);
  EXPECT_GT(all_fenced, 300);
}

}  // namespace
}  // namespace strata::broker::txn
