// The transaction coordinator's durability (broker/txn/txn_coordinator.h over a journal,
// broker/txn/txn_records.h): the records' bytes, and a model test — a transactional producer
// running transactions (partitions, data, consumer offsets, commit or abort) while journal writes
// complete late or fail, marker writes fail, and the coordinator crashes at random points and is
// rebuilt from what the journal had made durable. After every step: no transaction is committed on
// one partition and aborted on another, a commit the producer was told about is never aborted (and
// the reverse), and only committed transactions' offsets are visible. At the end every
// transaction's data is followed by a marker and every acknowledged commit's offsets are visible.
#include <gtest/gtest.h>

#include <deque>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "broker/group/group_records.h"
#include "broker/txn/txn_coordinator.h"
#include "broker/txn/txn_records.h"

namespace strata::broker::txn {
namespace {

TEST(TxnRecords, StateRecordIsKafkasTransactionLogValueV0) {
  EXPECT_EQ(records::state_key("tx"), std::string("\x00\x00\x00\x02tx", 6));
  TxnMetadata m;
  m.producer_id = 0x0102030405060708;
  m.producer_epoch = 3;
  m.timeout_ms = 60000;
  m.state = TxnState::prepare_commit;
  m.partitions = {{"b", 1}, {"a", 0}, {"b", 0}};
  m.started_ms = 7;
  const std::string v = records::encode_state(m, 9);
  std::string want(
      "\x00\x00"                          // version 0
      "\x01\x02\x03\x04\x05\x06\x07\x08"  // producer id
      "\x00\x03"                          // epoch
      "\x00\x00\xea\x60"                  // timeout 60000
      "\x02"                              // PrepareCommit
      "\x00\x00\x00\x02"                  // 2 topics
      "\x00\x01"
      "a\x00\x00\x00\x01\x00\x00\x00\x00"  // a: [0]
      "\x00\x01"
      "b\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01"  // b: [0, 1]
      "\x00\x00\x00\x00\x00\x00\x00\x09"                   // last update
      "\x00\x00\x00\x00\x00\x00\x00\x07",                  // start
      63);
  EXPECT_EQ(v, want);
  TxnMetadata back;
  int64_t last = 0;
  ASSERT_TRUE(records::decode_state(v, back, last));
  EXPECT_EQ(back, m);
  EXPECT_EQ(last, 9);
  EXPECT_FALSE(records::decode_state(v.substr(0, v.size() - 1), back, last));
  EXPECT_FALSE(records::decode_state(v + "x", back, last));

  auto k = records::decode_key(records::offsets_key("tx"));
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->kind, records::KeyKind::offsets);
  EXPECT_EQ(k->txn_id, "tx");
  EXPECT_FALSE(records::decode_key(std::string("\x00\x01\x00\x02tx", 6)).has_value());
  EXPECT_FALSE(records::decode_key(std::string("\x00\x00\x00\x09tx", 6)).has_value());

  records::TxnOffsets o;
  o["g"][{"in", 2}] = PendingOffset{"in", 2, 42, 5, std::string("meta")};
  o["h"];  // a group added without offsets yet
  o["h"][{"x", 0}] = PendingOffset{"x", 0, 1, -1, std::nullopt};
  records::TxnOffsets ob;
  ASSERT_TRUE(records::decode_offsets(records::encode_offsets(o), ob));
  ASSERT_EQ(ob.size(), 2u);
  EXPECT_EQ(ob["g"][TopicPartition("in", 2)].offset, 42);
  EXPECT_EQ(ob["g"][TopicPartition("in", 2)].metadata, std::optional<std::string>("meta"));
  EXPECT_EQ(ob["h"][TopicPartition("x", 0)].metadata, std::nullopt);
}

// A journal whose appends become durable in order when completed; a crash keeps a random prefix
// of the appends not yet completed (written, never acknowledged) and drops the rest.
struct CrashJournal : group::GroupJournal {
  struct Pending {
    int32_t partition;
    std::vector<group::JournalRecord> records;
    AppendDone done;
  };
  std::vector<std::vector<group::JournalRecord>> logs =
      std::vector<std::vector<group::JournalRecord>>(3);
  std::deque<Pending> pending;
  bool fail = false;

  int32_t partitions() const override { return static_cast<int32_t>(logs.size()); }
  bool partitions_fixed() const override { return true; }
  size_t max_write_bytes() const override { return std::numeric_limits<size_t>::max(); }
  void append(int32_t partition, std::vector<group::JournalRecord> records,
              AppendDone done) override {
    pending.push_back({partition, std::move(records), std::move(done)});
  }
  Status replay(int32_t partition,
                const std::function<Status(const group::JournalRecord&)>& fn) override {
    for (const auto& r : logs[static_cast<size_t>(partition)]) STRATA_RETURN_IF_ERROR(fn(r));
    return Status::Ok();
  }
  void run_async(std::function<void()> fn) override {
    if (defer_async) {
      queued.push_back(std::move(fn));
    } else {
      fn();
    }
  }
  // Completes the oldest `n` appends (failed ones are not written).
  void complete(size_t n) {
    while (n-- > 0 && !pending.empty()) {
      Pending p = std::move(pending.front());
      pending.pop_front();
      if (fail) {
        p.done(protocol::ErrorCode::coordinator_not_available, -1);
        continue;
      }
      auto& log = logs[static_cast<size_t>(p.partition)];
      for (auto& r : p.records) log.push_back(std::move(r));
      p.done(protocol::ErrorCode::none, static_cast<int64_t>(log.size()) - 1);
    }
  }
  // Leadership of the partitions moves: the first `keep` appends in flight were replicated (they
  // succeed), the rest fail — the old leader's callbacks run now, as its term ends.
  void move(size_t keep) {
    const bool was = fail;
    fail = false;
    complete(keep);
    fail = true;
    complete(pending.size());
    fail = was;
  }
  // Runs queued run_async work (defer_async).
  void run_queued() {
    auto q = std::move(queued);
    queued.clear();
    for (auto& f : q) f();
  }
  bool defer_async = false;
  std::vector<std::function<void()>> queued;
  void crash(size_t keep) {
    for (size_t i = 0; i < keep && i < pending.size(); ++i) {
      auto& log = logs[static_cast<size_t>(pending[i].partition)];
      for (auto& r : pending[i].records) log.push_back(std::move(r));
    }
    pending.clear();  // their callbacks belong to the crashed coordinator: never run
  }
};

struct Event {
  bool marker = false;
  bool commit = false;
  int64_t producer_id = -1;
  int txn = -1;
};

struct Effects : TxnEffects {
  std::map<TopicPartition, std::vector<Event>> logs;
  std::map<std::pair<std::string, TopicPartition>, int64_t> committed;
  bool fail_markers = false;
  int64_t next_id = 1000;
  std::vector<int32_t> coordinator_epochs;  // of every marker written
  bool write_marker(const TopicPartition& tp, int64_t producer_id, int16_t, bool commit,
                    int32_t coordinator_epoch) override {
    if (fail_markers) return false;
    logs[tp].push_back({true, commit, producer_id, -1});
    coordinator_epochs.push_back(coordinator_epoch);
    return true;
  }
  void commit_offsets(const std::string& group, int64_t, std::vector<PendingOffset> offsets,
                      std::function<void()> done) override {
    for (const auto& o : offsets) committed[{group, {o.topic, o.partition}}] = o.offset;
    done();
  }
  Result<int64_t> new_producer_id() override { return next_id++; }
  // What the broker does at start for open transactions no coordinator state owns.
  void abort_orphans(const std::set<std::pair<int64_t, TopicPartition>>& owned) {
    for (auto& [tp, log] : logs) {
      std::set<int64_t> open;
      for (const auto& e : log) {
        if (e.marker) {
          open.erase(e.producer_id);
        } else {
          open.insert(e.producer_id);
        }
      }
      for (int64_t pid : open) {
        if (!owned.count({pid, tp})) log.push_back({true, false, pid, -1});
      }
    }
  }
};

TEST(TxnDurability, AnswersBatchesAndMarkersWaitForTheJournal) {
  CrashJournal j;
  Effects fx;
  TxnCoordinator c(TxnLimits{60000}, fx, 0, &j);
  ASSERT_TRUE(c.load(0).ok());
  InitResult r = c.init_producer_id("t", 1000, -1, -1, 0);
  ASSERT_EQ(r.error, TxnError::none);
  std::optional<TxnError> got;
  c.when_durable("t", [&](TxnError e) { got = e; });
  EXPECT_FALSE(got.has_value()) << "the new epoch is not written yet";
  j.complete(1);
  EXPECT_EQ(got, TxnError::none);

  const TopicPartition x{"x", 0};
  ASSERT_EQ(c.add_partitions("t", r.producer_id, 0, {x}, 1), TxnError::none);
  auto produce = [&] {
    return c.append_in_txn("t", r.producer_id, 0, x, [&] {
      fx.logs[x].push_back({false, false, r.producer_id, 1});
    });
  };
  EXPECT_EQ(produce(), TxnError::invalid_txn_state) << "its membership is not durable yet";
  EXPECT_TRUE(fx.logs[x].empty());
  j.complete(1);
  EXPECT_EQ(produce(), TxnError::none);

  std::optional<TxnError> ended;
  c.end_txn("t", r.producer_id, 0, true, [&](TxnError e) { ended = e; });
  EXPECT_FALSE(ended.has_value());
  EXPECT_EQ(fx.logs[x].size(), 1u) << "no marker before PrepareCommit is durable";
  j.fail = true;
  j.complete(1);
  EXPECT_EQ(ended, TxnError::coordinator_not_available);
  EXPECT_EQ(fx.logs[x].size(), 1u);
  ended.reset();
  c.end_txn("t", r.producer_id, 0, true, [&](TxnError e) { ended = e; });
  EXPECT_EQ(ended, TxnError::concurrent_transactions) << "the retry rewrites PrepareCommit";
  j.fail = false;
  j.complete(1);
  ASSERT_EQ(fx.logs[x].size(), 2u);
  EXPECT_TRUE(fx.logs[x][1].marker && fx.logs[x][1].commit);
  ended.reset();
  c.end_txn("t", r.producer_id, 0, true, [&](TxnError e) { ended = e; });
  EXPECT_FALSE(ended.has_value()) << "CompleteCommit is not durable yet";
  j.complete(1);
  EXPECT_EQ(ended, TxnError::none);
  EXPECT_EQ(c.describe("t")->state, TxnState::complete_commit);
}

// A cluster's coordinator serves the ids of the partitions it leads, once loaded; when leadership
// moves, the new leader finishes a transaction left in PrepareCommit and writes its markers with
// its own coordinator epoch; the old one answers NOT_COORDINATOR and writes nothing more.
TEST(TxnOwnership, ANewLeaderFinishesThePreparedCommitWithItsEpoch) {
  CrashJournal j;
  Effects fx;
  const TxnClusterMode mode{true, 0, false};
  TxnCoordinator a(TxnLimits{60000}, fx, 0, &j, mode);
  const int32_t p = a.partition_for("t");
  std::string other = "u";
  while (a.partition_for(other) == p) other += "u";
  EXPECT_EQ(a.init_producer_id("t", 1000, -1, -1, 0).error, TxnError::not_coordinator);
  j.defer_async = true;
  a.own_partition(p, 4);
  EXPECT_EQ(a.init_producer_id("t", 1000, -1, -1, 0).error, TxnError::coordinator_load_in_progress);
  j.run_queued();
  EXPECT_EQ(a.owner_error(other), TxnError::not_coordinator);
  InitResult r = a.init_producer_id("t", 1000, -1, -1, 0);
  ASSERT_EQ(r.error, TxnError::none);
  j.complete(1);
  const TopicPartition x{"x", 0};
  ASSERT_EQ(a.add_partitions("t", r.producer_id, r.producer_epoch, {x}, 1), TxnError::none);
  j.complete(1);
  fx.logs[x].push_back({false, false, r.producer_id, 1});

  fx.fail_markers = true;
  std::optional<TxnError> ended;
  a.end_txn("t", r.producer_id, r.producer_epoch, true, [&](TxnError e) { ended = e; });
  j.complete(1);
  EXPECT_FALSE(ended.has_value()) << "markers are written by the worker, not inline";
  EXPECT_EQ(a.write_due_markers(INT64_MAX), 1u);
  EXPECT_EQ(ended, TxnError::none) << "the decision is durable; the markers are retried";
  EXPECT_EQ(a.describe("t")->state, TxnState::prepare_commit);
  EXPECT_EQ(fx.logs[x].size(), 1u);

  a.release_partition(p);
  j.run_queued();
  EXPECT_EQ(a.owner_error("t"), TxnError::not_coordinator);
  EXPECT_FALSE(a.describe("t").has_value());
  ended.reset();
  a.end_txn("t", r.producer_id, r.producer_epoch, true, [&](TxnError e) { ended = e; });
  EXPECT_EQ(ended, TxnError::not_coordinator);

  fx.fail_markers = false;
  TxnCoordinator b(TxnLimits{60000}, fx, 0, &j, mode);
  b.own_partition(p, 5);
  j.run_queued();
  EXPECT_EQ(a.write_due_markers(INT64_MAX), 0u) << "the deposed coordinator writes nothing";
  EXPECT_EQ(b.write_due_markers(INT64_MAX), 1u);
  ASSERT_EQ(fx.logs[x].size(), 2u);
  EXPECT_TRUE(fx.logs[x][1].marker && fx.logs[x][1].commit);
  EXPECT_EQ(fx.coordinator_epochs, std::vector<int32_t>{5});
  ended.reset();
  b.end_txn("t", r.producer_id, r.producer_epoch, true, [&](TxnError e) { ended = e; });
  EXPECT_FALSE(ended.has_value()) << "CompleteCommit is not durable yet";
  j.complete(1);
  EXPECT_EQ(ended, TxnError::none);
  EXPECT_EQ(b.describe("t")->state, TxnState::complete_commit);
}

// (seed, moves): moves = a cluster's coordinator, whose "crash" is its leadership moving to a new
// coordinator (the old one stays alive, deposed: late callbacks reach it) that loads the partition
// as replicated and writes markers from its worker step; else a single node killed and restarted.
class TxnRecoveryModel : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(TxnRecoveryModel, CrashesNeverSplitOrReverseADecision) {
  const bool moves = std::get<1>(GetParam());
  std::mt19937 rng(static_cast<uint32_t>(std::get<0>(GetParam())));
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  CrashJournal journal;
  Effects fx;
  const int32_t timeout = 10000;
  auto make = [&] {
    return std::make_unique<TxnCoordinator>(TxnLimits{60000}, fx, 0, &journal,
                                            TxnClusterMode{moves, 0, false});
  };
  auto c = make();
  std::unique_ptr<TxnCoordinator> deposed;
  int32_t coordinator_epoch = 1;
  const int32_t partition = c->partition_for("t");
  if (moves) {
    EXPECT_EQ(c->owner_error("t"), TxnError::not_coordinator);
    c->own_partition(partition, coordinator_epoch);
    EXPECT_EQ(c->owned_partitions(), std::vector<int32_t>{partition});
  } else {
    ASSERT_TRUE(c->load(0).ok());
  }
  auto markers = [&] {
    if (moves) c->write_due_markers(INT64_MAX);
  };
  const std::vector<TopicPartition> tps = {{"a", 0}, {"a", 1}, {"b", 0}};
  int64_t now = 0;

  // The producer: one request at a time, retried after a crash or a retriable error.
  enum class Step { init, add, produce, offsets, commit_offsets, end, done };
  Step step = Step::init;
  int64_t pid = -1;
  int16_t epoch = -1;
  int txn = 0;
  bool commit = true;
  std::set<TopicPartition> parts;
  bool in_flight = false;
  std::optional<TxnError> answer;
  std::map<int, bool> acked;  // transaction -> committed, as EndTxn told the producer
  std::map<int, std::vector<std::pair<std::string, TopicPartition>>> txn_offsets;
  auto reply = [&](TxnError e) { answer = e; };
  auto after_durable = [&](TxnError e) {
    if (e != TxnError::none) return reply(e);
    c->when_durable("t", reply);
  };
  auto send = [&] {
    in_flight = true;
    answer.reset();
    switch (step) {
      case Step::init: {
        InitResult r = c->init_producer_id("t", timeout, -1, -1, now);
        if (r.error != TxnError::none) return reply(r.error);
        c->when_durable("t", [&, r](TxnError e) {
          if (e == TxnError::none) {
            pid = r.producer_id;
            epoch = r.producer_epoch;
          }
          reply(e);
        });
        return;
      }
      case Step::add:
        return after_durable(c->add_partitions(
            "t", pid, epoch, std::vector<TopicPartition>(parts.begin(), parts.end()), now));
      case Step::produce:
        for (const auto& tp : parts) {
          TxnError e = c->append_in_txn("t", pid, epoch, tp, [&] {
            fx.logs[tp].push_back({false, false, pid, txn});
          });
          if (e != TxnError::none) return reply(e);
        }
        return reply(TxnError::none);
      case Step::offsets:
        return after_durable(c->add_offsets("t", pid, epoch, "g", now));
      case Step::commit_offsets: {
        std::vector<PendingOffset> os;
        for (const auto& tp : parts)
          os.push_back({tp.first, tp.second, txn * 10 + tp.second, -1, {}});
        return after_durable(c->commit_offsets("t", "g", pid, epoch, os));
      }
      case Step::end:
        return c->end_txn("t", pid, epoch, commit, reply);
      case Step::done:
        return reply(TxnError::none);
    }
  };
  auto on_answer = [&] {
    const TxnError e = *answer;
    in_flight = false;
    if (e == TxnError::concurrent_transactions || e == TxnError::coordinator_not_available ||
        e == TxnError::not_coordinator || e == TxnError::coordinator_load_in_progress) {
      return;  // retried (after finding the coordinator again)
    }
    if (e != TxnError::none) {  // fenced (a timeout abort) or a lost id: start over
      step = Step::init;
      return;
    }
    switch (step) {
      case Step::init:
      case Step::done:
        ++txn;
        parts.clear();
        parts.insert(tps[pick(3)]);
        if (pick(2)) parts.insert(tps[pick(3)]);
        commit = pick(3) != 0;
        step = Step::add;
        break;
      case Step::add:
        step = Step::produce;
        break;
      case Step::produce:
        step = pick(2) ? Step::offsets : Step::end;
        break;
      case Step::offsets:
        step = Step::commit_offsets;
        break;
      case Step::commit_offsets:
        for (const auto& tp : parts) txn_offsets[txn].push_back({"g", tp});
        step = Step::end;
        break;
      case Step::end:
        acked[txn] = commit;
        step = Step::done;
        break;
    }
  };

  // Decisions per transaction, read off the partitions: data followed by a marker of its producer.
  auto decisions = [&] {
    std::map<int, std::set<bool>> out;
    for (const auto& [tp, log] : fx.logs) {
      std::vector<int> open;
      for (const auto& e : log) {
        if (!e.marker) {
          open.push_back(e.txn);
          continue;
        }
        for (int t : open) out[t].insert(e.commit);
        open.clear();
      }
    }
    return out;
  };
  auto check = [&] {
    for (const auto& [t, d] : decisions()) {
      EXPECT_EQ(d.size(), 1u) << "transaction " << t << " committed and aborted";
      if (acked.count(t)) {
        EXPECT_EQ(*d.begin(), acked[t]) << "transaction " << t;
      }
    }
    // Visible offsets belong to committed transactions only.
    for (const auto& [k, off] : fx.committed) {
      const int t = static_cast<int>(off / 10);
      auto d = decisions();
      const bool committed = d.count(t) ? *d[t].begin() : acked.count(t) && acked[t];
      EXPECT_TRUE(committed) << "offset " << off << " of transaction " << t << " visible";
    }
  };

  int crashes = 0;
  for (int i = 0; i < 1500; ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    now += pick(timeout / 20);
    const int op = pick(10);
    if (op <= 3) {
      if (!in_flight) send();
    } else if (op <= 6) {
      journal.complete(static_cast<size_t>(pick(3)));
    } else if (op == 7) {
      journal.fail = pick(4) == 0;
      fx.fail_markers = pick(5) == 0;
    } else if (op == 8) {
      c->sweep(now);
      markers();
      if (deposed) {  // a deposed coordinator's sweep and worker find nothing of its own
        EXPECT_EQ(deposed->sweep(now), 0u);
        EXPECT_EQ(deposed->write_due_markers(INT64_MAX), 0u);
        EXPECT_EQ(deposed->owner_error("t"), TxnError::not_coordinator);
      }
    } else if (moves) {  // leadership moves: the request in flight is lost or refused; retried
      c->release_partition(partition);
      journal.move(static_cast<size_t>(pick(3)));
      deposed = std::move(c);
      c = make();
      c->own_partition(partition, ++coordinator_epoch);
      in_flight = false;
      ++crashes;
    } else {  // crash and restart: the producer's request in flight is lost; it retries
      c.reset();
      journal.crash(static_cast<size_t>(pick(3)));
      c = make();
      ASSERT_TRUE(c->load(now).ok());
      fx.abort_orphans(c->open_transactions());
      in_flight = false;
      ++crashes;
    }
    if (in_flight && answer) on_answer();
    check();
    if (::testing::Test::HasFailure()) return;
  }
  // Quiesce: writes succeed, markers too, the timeout aborts what is still open.
  journal.fail = false;
  fx.fail_markers = false;
  for (int round = 0; round < 4; ++round) {
    journal.complete(1000);
    markers();
    now += 2 * timeout;
    c->sweep(now);
    journal.complete(1000);
    markers();
    journal.complete(1000);
  }
  check();
  for (const auto& [tp, log] : fx.logs) {
    ASSERT_FALSE(log.empty());
    EXPECT_TRUE(log.back().marker) << tp.first << "-" << tp.second << " left open";
  }
  for (const auto& [t, commit] : acked) {
    if (!commit) continue;
    for (const auto& k : txn_offsets[t]) {
      // A later committed transaction may have moved the offset on.
      ASSERT_TRUE(fx.committed.count(k)) << "transaction " << t;
      EXPECT_GE(fx.committed[k] / 10, t);
    }
  }
  EXPECT_GT(crashes, 10);
  int commits = 0;
  for (const auto& [t, c2] : acked) commits += c2 ? 1 : 0;
  EXPECT_GT(commits, 5);
}

INSTANTIATE_TEST_SUITE_P(Seeds, TxnRecoveryModel,
                         ::testing::Combine(::testing::Range(1, 31), ::testing::Bool()));

}  // namespace
}  // namespace strata::broker::txn
