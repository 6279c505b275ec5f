// The transaction coordinator (broker/txn/txn_coordinator.h) over fake partitions and a fake
// offsets store: by example, and a model test — two producer instances of one transactional id
// doing random InitProducerId / AddPartitions / AddOffsets / TxnOffsetCommit / Produce / EndTxn
// while timeouts fire and marker writes fail and are retried. After every step the coordinator's
// answers, the markers on each partition, which records a read_committed reader would keep, the
// offsets visible to OffsetFetch and the pending ones equal a simple model.
#include "broker/txn/txn_coordinator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace strata::broker::txn {
namespace {

// A partition's log as the coordinator and producers leave it.
struct Event {
  bool marker = false;
  bool commit = false;
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t coordinator_epoch = -1;
  int txn = -1;  // data: the model's transaction number
};

struct FakeEffects : TxnEffects {
  std::map<TopicPartition, std::vector<Event>> logs;
  std::map<std::pair<std::string, TopicPartition>, int64_t> committed;  // visible offsets
  bool fail_markers = false;
  int64_t next_id = 1000;

  bool write_marker(const TopicPartition& tp, int64_t producer_id, int16_t epoch, bool commit,
                    int32_t coordinator_epoch) override {
    if (fail_markers) return false;
    Event e;
    e.coordinator_epoch = coordinator_epoch;
    e.marker = true;
    e.commit = commit;
    e.producer_id = producer_id;
    e.epoch = epoch;
    logs[tp].push_back(e);
    return true;
  }
  void commit_offsets(const std::string& group, int64_t, std::vector<PendingOffset> offsets,
                      std::function<void()> done) override {
    for (const auto& o : offsets) committed[{group, {o.topic, o.partition}}] = o.offset;
    done();
  }
  Result<int64_t> new_producer_id() override { return next_id++; }
};

TEST(TxnCoordinator, CommitAbortOffsetsAndFencingByExample) {
  FakeEffects fx;
  TxnCoordinator c(TxnLimits{60000}, fx);
  EXPECT_EQ(c.init_producer_id("t", 120000, -1, -1, 0).error,
            TxnError::invalid_transaction_timeout);
  InitResult a = c.init_producer_id("t", 1000, -1, -1, 0);
  ASSERT_EQ(a.error, TxnError::none);
  EXPECT_EQ(a.producer_epoch, 0);
  const TopicPartition p0{"x", 0}, p1{"y", 1};
  bool appended = false;
  EXPECT_EQ(c.append_in_txn("t", a.producer_id, 0, p0, [&] { appended = true; }),
            TxnError::invalid_txn_state)
      << "a partition must be added before a transactional batch";
  EXPECT_FALSE(appended);
  ASSERT_EQ(c.add_partitions("t", a.producer_id, 0, {p0, p1}, 10), TxnError::none);
  EXPECT_EQ(c.append_in_txn("t", a.producer_id, 0, p0, [&] { appended = true; }), TxnError::none);
  EXPECT_TRUE(appended);
  ASSERT_EQ(c.add_offsets("t", a.producer_id, 0, "g", 10), TxnError::none);
  ASSERT_EQ(c.commit_offsets("t", "g", a.producer_id, 0, {{"in", 3, 42, -1, std::nullopt}}),
            TxnError::none);
  EXPECT_TRUE(c.has_pending_offset("g", "in", 3));
  EXPECT_TRUE(fx.committed.empty()) << "invisible before the commit";
  TxnError ended = TxnError::invalid_txn_state;
  c.end_txn("t", a.producer_id, 0, true, [&](TxnError e) { ended = e; });
  EXPECT_EQ(ended, TxnError::none);
  EXPECT_EQ(fx.logs[p0].size(), 1u);
  EXPECT_EQ(fx.logs[p1].size(), 1u);
  EXPECT_TRUE(fx.logs[p0][0].commit);
  EXPECT_FALSE(c.has_pending_offset("g", "in", 3));
  EXPECT_EQ((fx.committed[{"g", {"in", 3}}]), 42);

  // A second instance fences the first, whose open transaction is aborted with a bumped epoch.
  ASSERT_EQ(c.add_partitions("t", a.producer_id, 0, {p0}, 20), TxnError::none);
  ASSERT_EQ(c.add_offsets("t", a.producer_id, 0, "g", 20), TxnError::none);
  ASSERT_EQ(c.commit_offsets("t", "g", a.producer_id, 0, {{"in", 3, 99, -1, std::nullopt}}),
            TxnError::none);
  EXPECT_EQ(c.init_producer_id("t", 1000, -1, -1, 30).error, TxnError::concurrent_transactions);
  ASSERT_EQ(fx.logs[p0].size(), 2u);
  EXPECT_FALSE(fx.logs[p0][1].commit);
  EXPECT_EQ(fx.logs[p0][1].epoch, 1) << "the abort fences epoch 0";
  EXPECT_FALSE(c.has_pending_offset("g", "in", 3));
  EXPECT_EQ((fx.committed[{"g", {"in", 3}}]), 42) << "aborted offsets are dropped";
  InitResult b = c.init_producer_id("t", 1000, -1, -1, 31);
  ASSERT_EQ(b.error, TxnError::none);
  EXPECT_EQ(b.producer_id, a.producer_id);
  EXPECT_EQ(b.producer_epoch, 2);
  EXPECT_EQ(c.add_partitions("t", a.producer_id, 0, {p0}, 32), TxnError::producer_fenced);
  EXPECT_EQ(c.init_producer_id("t", 1000, a.producer_id, 0, 33).error, TxnError::producer_fenced)
      << "a v3+ resume with an old epoch";
  int ends = 0;
  c.end_txn("t", a.producer_id, 0, true, [&](TxnError e) {
    EXPECT_EQ(e, TxnError::producer_fenced);
    ++ends;
  });
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(c.add_partitions("nobody", 1, 0, {p0}, 0), TxnError::invalid_producer_id_mapping);

  // Timeout: the sweep aborts with an epoch bump.
  ASSERT_EQ(c.add_partitions("t", b.producer_id, 2, {p1}, 100), TxnError::none);
  EXPECT_EQ(c.sweep(1000), 0u) << "not yet past the timeout";
  EXPECT_EQ(c.sweep(1101), 1u);
  EXPECT_FALSE(fx.logs[p1].back().commit);
  EXPECT_EQ(fx.logs[p1].back().epoch, 3);
  EXPECT_EQ(c.describe("t")->state, TxnState::complete_abort);
  EXPECT_EQ(c.add_partitions("t", b.producer_id, 2, {p1}, 1200), TxnError::producer_fenced);
}

// KIP-360: a v3+ InitProducerId carrying the epoch before the last bump is a retry whose answer
// was lost: it gets the current epoch without a second bump. After a fence (a new instance or a
// timeout abort) the old epoch is fenced, as in Kafka.
TEST(TxnCoordinator, InitProducerIdRetryOfALostAnswerGetsTheCurrentEpoch) {
  FakeEffects fx;
  TxnCoordinator c(TxnLimits{60000}, fx);
  InitResult a = c.init_producer_id("t", 1000, -1, -1, 0);
  ASSERT_EQ(a.error, TxnError::none);
  InitResult b = c.init_producer_id("t", 1000, a.producer_id, a.producer_epoch, 1);
  ASSERT_EQ(b.error, TxnError::none);
  EXPECT_EQ(b.producer_epoch, a.producer_epoch + 1);
  InitResult retry = c.init_producer_id("t", 1000, a.producer_id, a.producer_epoch, 2);
  ASSERT_EQ(retry.error, TxnError::none) << "the answer to b was lost: the client retries";
  EXPECT_EQ(retry.producer_id, b.producer_id);
  EXPECT_EQ(retry.producer_epoch, b.producer_epoch) << "no second bump";
  EXPECT_EQ(c.init_producer_id("t", 1000, a.producer_id, a.producer_epoch - 1, 3).error,
            TxnError::producer_fenced);
  // A timeout abort fences: the epoch before it is not a retry any more.
  const TopicPartition p0{"x", 0};
  ASSERT_EQ(c.add_partitions("t", b.producer_id, b.producer_epoch, {p0}, 10), TxnError::none);
  ASSERT_EQ(c.sweep(2000), 1u);
  EXPECT_EQ(c.init_producer_id("t", 1000, b.producer_id, b.producer_epoch, 2001).error,
            TxnError::producer_fenced);
  InitResult fresh = c.init_producer_id("t", 1000, -1, -1, 2002);
  ASSERT_EQ(fresh.error, TxnError::none);
  EXPECT_EQ(fresh.producer_epoch, b.producer_epoch + 2) << "the abort's bump, then this one";
}

TEST(TxnCoordinator, FailedMarkersAreRetriedBySweep) {
  FakeEffects fx;
  TxnCoordinator c(TxnLimits{60000}, fx);
  InitResult a = c.init_producer_id("t", 1000, -1, -1, 0);
  ASSERT_EQ(c.add_partitions("t", a.producer_id, 0, {{"x", 0}}, 0), TxnError::none);
  fx.fail_markers = true;
  TxnError ended = TxnError::invalid_txn_state;
  c.end_txn("t", a.producer_id, 0, true, [&](TxnError e) { ended = e; });
  EXPECT_EQ(ended, TxnError::none) << "the decision is taken";
  EXPECT_EQ(c.describe("t")->state, TxnState::prepare_commit);
  EXPECT_EQ(c.add_partitions("t", a.producer_id, 0, {{"x", 0}}, 0),
            TxnError::concurrent_transactions);
  c.sweep(1);
  EXPECT_EQ(c.describe("t")->state, TxnState::prepare_commit);
  fx.fail_markers = false;
  c.sweep(2);
  EXPECT_EQ(c.describe("t")->state, TxnState::complete_commit);
  const auto& log = fx.logs[TopicPartition{"x", 0}];
  ASSERT_EQ(log.size(), 1u);
  EXPECT_TRUE(log[0].commit);
}

TEST(TxnCoordinator, IdleTransactionalIdsExpireOpenOnesDoNot) {
  FakeEffects fx;
  TxnCoordinator c(TxnLimits{60000}, fx, 1000);
  InitResult a = c.init_producer_id("idle", 60000, -1, -1, 0);
  InitResult b = c.init_producer_id("busy", 60000, -1, -1, 0);
  ASSERT_EQ(c.add_partitions("busy", b.producer_id, 0, {{"x", 0}}, 500), TxnError::none);
  c.sweep(900);
  EXPECT_TRUE(c.describe("idle").has_value()) << "not idle long enough";
  c.sweep(1501);
  EXPECT_FALSE(c.describe("idle").has_value()) << "forgotten";
  EXPECT_TRUE(c.describe("busy").has_value()) << "a transaction is open";
  EXPECT_EQ(c.add_partitions("idle", a.producer_id, 0, {{"x", 0}}, 1600),
            TxnError::invalid_producer_id_mapping);
  InitResult again = c.init_producer_id("idle", 60000, -1, -1, 1700);
  ASSERT_EQ(again.error, TxnError::none);
  EXPECT_NE(again.producer_id, a.producer_id) << "a new producer id after expiry";
  EXPECT_EQ(again.producer_epoch, 0);
}

// The model: what the transactional id's state and each transaction's fate should be.
struct Model {
  bool exists = false;
  int64_t producer_id = -1;
  int16_t epoch = -1;
  enum class S { empty, open, prep_commit, prep_abort, done_commit, done_abort } s = S::empty;
  int64_t started = 0;
  int txn = -1;  // number of the current (or last) transaction
  std::map<int, std::set<TopicPartition>> txn_partitions;
  std::map<int, bool> outcome;  // finished transactions: true = committed
  std::set<std::string> groups;
  std::map<std::pair<std::string, TopicPartition>, int64_t> pending, committed;
  std::map<TopicPartition, int> markers;  // markers written per partition

  TxnError check(int64_t pid, int16_t e) const {
    if (pid != producer_id) return TxnError::invalid_producer_id_mapping;
    if (e < epoch) return TxnError::producer_fenced;
    if (e > epoch) return TxnError::invalid_producer_id_mapping;
    return TxnError::none;
  }
  bool preparing() const { return s == S::prep_commit || s == S::prep_abort; }
  // The decision's markers are written (unless they fail).
  void finish(bool fail) {
    if (fail && !txn_partitions[txn].empty()) return;  // no marker to fail without partitions
    const bool commit = s == S::prep_commit;
    for (const auto& tp : txn_partitions[txn]) ++markers[tp];
    outcome[txn] = commit;
    if (commit) {
      for (auto& [k, v] : pending) committed[k] = v;
    }
    pending.clear();
    groups.clear();
    s = commit ? S::done_commit : S::done_abort;
  }
  void begin(int64_t now) {
    if (s == S::open) return;
    s = S::open;
    started = now;
    ++txn;
    txn_partitions[txn];
    groups.clear();
    pending.clear();
  }
};

class TxnCoordinatorModel : public ::testing::TestWithParam<int> {};

TEST_P(TxnCoordinatorModel, RandomOperationsFromTwoInstancesMatchTheModel) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  FakeEffects fx;
  const int32_t timeout = 10000;
  TxnCoordinator c(TxnLimits{60000}, fx);
  Model m;
  struct Instance {
    int64_t pid = -1;
    int16_t epoch = -1;
  } inst[2];
  const std::vector<TopicPartition> tps = {{"a", 0}, {"a", 1}, {"b", 0}};
  const std::vector<std::string> groups = {"g1", "g2"};
  int64_t now = 0;
  int newest = 0;
  for (int step = 0; step < 2000; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    now += pick(timeout / 40);  // most transactions end before their timeout
    // Mostly the newest instance (so that transactions complete), sometimes the zombie.
    const int who = pick(4) == 0 ? 1 - newest : newest;
    Instance& me = inst[who];
    // A fenced (or new) instance mostly re-initialises, as a client would.
    const bool stale = me.pid < 0 || me.epoch < m.epoch;
    const int op = stale && pick(2) ? 0 : pick(12);
    if (op == 0) {  // InitProducerId
      InitResult r = c.init_producer_id("t", timeout, -1, -1, now);
      if (m.preparing()) {
        EXPECT_EQ(r.error, TxnError::concurrent_transactions);
      } else if (m.s == Model::S::open) {
        EXPECT_EQ(r.error, TxnError::concurrent_transactions);
        ++m.epoch;
        m.s = Model::S::prep_abort;
        m.finish(fx.fail_markers);
      } else {
        ASSERT_EQ(r.error, TxnError::none);
        if (!m.exists) m.producer_id = r.producer_id;
        m.exists = true;
        ++m.epoch;
        m.s = Model::S::empty;
        EXPECT_EQ(r.producer_id, m.producer_id);
        EXPECT_EQ(r.producer_epoch, m.epoch);
        me.pid = r.producer_id;
        me.epoch = r.producer_epoch;
        newest = pick(3) == 0 ? 1 - who : who;  // the other one may start next
      }
    } else if (op == 1 || op == 2) {  // AddPartitionsToTxn
      std::vector<TopicPartition> add = {tps[pick(3)]};
      if (pick(2)) add.push_back(tps[pick(3)]);
      TxnError e = c.add_partitions("t", me.pid, me.epoch, add, now);
      TxnError want = !m.exists ? TxnError::invalid_producer_id_mapping : m.check(me.pid, me.epoch);
      if (want == TxnError::none && m.preparing()) want = TxnError::concurrent_transactions;
      EXPECT_EQ(e, want);
      if (want == TxnError::none) {
        m.begin(now);
        m.txn_partitions[m.txn].insert(add.begin(), add.end());
      }
    } else if (op == 3 || op == 11) {  // AddOffsetsToTxn
      const std::string& g = groups[pick(2)];
      TxnError e = c.add_offsets("t", me.pid, me.epoch, g, now);
      TxnError want = !m.exists ? TxnError::invalid_producer_id_mapping : m.check(me.pid, me.epoch);
      if (want == TxnError::none && m.preparing()) want = TxnError::concurrent_transactions;
      EXPECT_EQ(e, want);
      if (want == TxnError::none) {
        m.begin(now);
        m.groups.insert(g);
      }
    } else if (op == 4 || op == 9) {  // TxnOffsetCommit
      // Mostly a group of the transaction (else the answer is INVALID_TXN_STATE).
      const std::string g = !m.groups.empty() && pick(4) ? *m.groups.begin() : groups[pick(2)];
      const TopicPartition tp = tps[pick(3)];
      const int64_t off = pick(1000);
      TxnError e = c.commit_offsets("t", g, me.pid, me.epoch, {{tp.first, tp.second, off, -1, {}}});
      TxnError want = !m.exists ? TxnError::invalid_producer_id_mapping : m.check(me.pid, me.epoch);
      if (want == TxnError::none && (m.s != Model::S::open || !m.groups.count(g))) {
        want = TxnError::invalid_txn_state;
      }
      EXPECT_EQ(e, want);
      if (want == TxnError::none) m.pending[{g, tp}] = off;
    } else if (op == 5 || op == 6) {  // Produce
      const TopicPartition tp = tps[pick(3)];
      const int txn = m.txn;
      TxnError e = c.append_in_txn("t", me.pid, me.epoch, tp, [&] {
        Event d;
        d.producer_id = me.pid;
        d.epoch = me.epoch;
        d.txn = txn;
        fx.logs[tp].push_back(d);
      });
      TxnError want = !m.exists ? TxnError::invalid_producer_id_mapping : m.check(me.pid, me.epoch);
      if (want == TxnError::none && (m.s != Model::S::open || !m.txn_partitions[m.txn].count(tp))) {
        want = TxnError::invalid_txn_state;
      }
      EXPECT_EQ(e, want);
    } else if (op == 7 || op == 10) {  // EndTxn
      const bool commit = pick(3) != 0;
      std::optional<TxnError> got;
      c.end_txn("t", me.pid, me.epoch, commit, [&](TxnError e) { got = e; });
      TxnError want = !m.exists ? TxnError::invalid_producer_id_mapping : m.check(me.pid, me.epoch);
      if (want == TxnError::none) {
        switch (m.s) {
          case Model::S::open:
            m.s = commit ? Model::S::prep_commit : Model::S::prep_abort;
            m.finish(fx.fail_markers);
            break;
          case Model::S::prep_commit:
          case Model::S::prep_abort:
            want = (m.s == Model::S::prep_commit) == commit ? TxnError::concurrent_transactions
                                                            : TxnError::invalid_txn_state;
            break;
          case Model::S::done_commit:
          case Model::S::done_abort:
            if ((m.s == Model::S::done_commit) != commit) want = TxnError::invalid_txn_state;
            break;
          case Model::S::empty:
            want = TxnError::invalid_txn_state;
            break;
        }
      }
      ASSERT_TRUE(got.has_value()) << "EndTxn answered at once by the fakes";
      EXPECT_EQ(*got, want);
    } else {  // time passes: the sweep; marker failures come and go
      if (pick(3) == 0) fx.fail_markers = !fx.fail_markers;
      now += pick(2 * timeout);
      size_t aborted = c.sweep(now);
      size_t want = 0;
      if (m.preparing()) {
        m.finish(fx.fail_markers);
      } else if (m.s == Model::S::open && now - m.started > timeout) {
        ++m.epoch;
        m.s = Model::S::prep_abort;
        m.finish(fx.fail_markers);
        want = 1;
      }
      EXPECT_EQ(aborted, want);
    }

    // The coordinator's state.
    if (m.exists) {
      auto d = c.describe("t");
      ASSERT_TRUE(d.has_value());
      EXPECT_EQ(d->producer_epoch, m.epoch);
    }
    // Offsets: visible = committed ones; pending = those of the open transaction.
    EXPECT_EQ(fx.committed, m.committed);
    for (const auto& g : groups) {
      for (const auto& tp : tps) {
        EXPECT_EQ(c.has_pending_offset(g, tp.first, tp.second), m.pending.count({g, tp}) > 0)
            << g << " " << tp.first << "-" << tp.second;
      }
    }
    // Every partition: one marker per finished transaction that held it; a read_committed reader
    // keeps exactly the records of committed transactions; markers' epochs never go down.
    for (const auto& tp : tps) {
      const auto& log = fx.logs[tp];
      int markers = 0;
      int16_t last_epoch = -1;
      std::vector<int> open;
      for (const auto& ev : log) {
        if (ev.marker) {
          ++markers;
          EXPECT_GE(ev.epoch, last_epoch);
          last_epoch = ev.epoch;
          for (int t : open) {
            ASSERT_TRUE(m.outcome.count(t)) << "transaction " << t << " ended in the log only";
            EXPECT_EQ(m.outcome[t], ev.commit) << "transaction " << t;
          }
          open.clear();
        } else {
          open.push_back(ev.txn);
        }
      }
      for (int t : open) EXPECT_FALSE(m.outcome.count(t)) << "finished without a marker";
      EXPECT_EQ(markers, m.markers[tp]);
    }
    if (::testing::Test::HasFailure()) return;
  }
  // The walk reached the interesting states (committed offsets too, in 39 of the 40 seeds).
  int commits = 0, aborts = 0;
  for (const auto& [t, commit] : m.outcome) (commit ? commits : aborts)++;
  EXPECT_GT(commits, 0);
  EXPECT_GT(aborts, 0);
}

INSTANTIATE_TEST_SUITE_P(Seeds, TxnCoordinatorModel, ::testing::Range(1, 41));

}  // namespace
}  // namespace strata::broker::txn
