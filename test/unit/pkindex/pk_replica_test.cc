// PkState on replicated logs: a follower applies only up to the high watermark it is given, a new
// leader computes on top of the records an earlier leader wrote but nobody committed yet, a leader
// applies held writes as the high watermark passes them, a demoted leader drops what it held, and
// a state ahead of a truncated log says so.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pkindex/pk_state.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"
#include "test/unit/pkindex/pk_write_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<uint8_t> upserts(const std::vector<std::pair<std::string, std::string>>& kvs) {
  protocol::RecordBatchBuilder bb;
  int64_t ts = 1000;
  for (const auto& [k, v] : kvs) bb.add(ts++, b(k), b(v));
  return bb.build();
}

// The change kinds of a changelog batch, in record order.
std::vector<std::string> kinds(std::span<const uint8_t> batch) {
  protocol::RecordBatchView v(batch);
  auto r = protocol::RecordReader::open(v);
  EXPECT_TRUE(r.ok());
  std::vector<std::string> out;
  protocol::Record rec;
  while (*r->next(rec)) {
    auto it = rec.headers();
    protocol::Header h;
    while (it.next(h)) {
      if (h.key == protocol::pk::kChangeHeader && h.value) {
        out.emplace_back(reinterpret_cast<const char*>(h.value->data()), h.value->size());
      }
    }
  }
  return out;
}

struct Replica {
  explicit Replica(const std::string& dir, PkEnvironment& env, TableConfig table) {
    storage::LogConfig lc;
    lc.replicated = true;
    auto l = storage::PartitionLog::open(storage::default_env(), dir, lc, 1);
    EXPECT_TRUE(l.ok()) << l.status().to_string();
    log = std::move(*l);
    PkState::Options o;
    o.table = table;
    o.replicated = true;
    auto s = PkState::open(env, *log, o);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    state = std::move(*s);
  }
  std::optional<std::string> get(const std::string& key) {
    auto r = state->lookup(b(key));
    EXPECT_TRUE(r.ok());
    if (!r->found) return std::nullopt;
    return r->value;
  }
  std::unique_ptr<storage::PartitionLog> log;
  std::unique_ptr<PkState> state;
};

class PkReplica : public ::testing::Test {
 protected:
  // Leader `l` writes `kvs` (held, as a replicated leader does); returns the changelog batch.
  std::vector<uint8_t> write(Replica& l,
                             const std::vector<std::pair<std::string, std::string>>& kvs) {
    auto input = upserts(kvs);
    auto w = testing::write_through(*l.state, *l.log, input, 1, codec::Compression::none,
                                    /*hold=*/true);
    EXPECT_TRUE(w.ok()) << w.result.status.to_string();
    return w.batch;
  }
  // Copies a stored changelog batch to a follower's log as replication does.
  static void replicate(Replica& f, const std::vector<uint8_t>& batch) {
    ASSERT_TRUE(f.log->append_as_follower(batch, 1).ok());
  }

  storage::testing::TempDir tmp_;
  PkEnvironment env_;
};

TEST_F(PkReplica, FollowerAppliesOnlyUpToTheHighWatermark) {
  Replica leader(tmp_.sub("l"), env_, TableConfig{});
  Replica follower(tmp_.sub("f"), env_, TableConfig{});
  ASSERT_TRUE(leader.log->become_leader(1).ok());
  ASSERT_TRUE(leader.state->lead().ok());
  ASSERT_TRUE(follower.state->follow().ok());
  auto b1 = write(leader, {{"a", "1"}, {"b", "1"}});
  auto b2 = write(leader, {{"a", "2"}});
  EXPECT_FALSE(leader.get("a")) << "nothing is visible on the leader before it is committed";
  replicate(follower, b1);
  replicate(follower, b2);
  EXPECT_EQ(follower.log->log_end_offset(), 3);

  ASSERT_TRUE(follower.state->apply_committed(2).ok());  // the first batch is committed
  EXPECT_EQ(follower.get("a"), "1");
  EXPECT_EQ(follower.get("b"), "1");
  ASSERT_TRUE(leader.state->apply_committed(2).ok());
  EXPECT_EQ(leader.get("a"), "1") << "the leader applies what the high watermark passed";
  EXPECT_EQ(leader.state->overlay_size(), 1u) << "the second batch is still held";

  ASSERT_TRUE(follower.state->apply_committed(3).ok());
  ASSERT_TRUE(leader.state->apply_committed(3).ok());
  EXPECT_EQ(follower.get("a"), "2");
  EXPECT_EQ(leader.get("a"), "2");
  EXPECT_EQ(follower.state->applied_offset(), 2);
  EXPECT_EQ(leader.state->applied_offset(), 2);
  ASSERT_TRUE(follower.state->apply_committed(3).ok()) << "applying again changes nothing";
  EXPECT_EQ(follower.state->applied_offset(), 2);
}

TEST_F(PkReplica, NewLeaderComputesOnTopOfTheUncommittedTail) {
  TableConfig first_row;
  first_row.merge_engine = MergeEngine::first_row;  // a second write of a key changes nothing
  Replica old_leader(tmp_.sub("l"), env_, first_row);
  Replica next(tmp_.sub("f"), env_, first_row);
  ASSERT_TRUE(old_leader.log->become_leader(1).ok());
  ASSERT_TRUE(old_leader.state->lead().ok());
  ASSERT_TRUE(next.state->follow().ok());
  auto b1 = write(old_leader, {{"a", "first"}});
  replicate(next, b1);  // fetched, but the old leader died before the high watermark moved
  EXPECT_EQ(next.state->applied_offset(), -1);

  ASSERT_TRUE(next.log->become_leader(2).ok());
  ASSERT_TRUE(next.state->lead().ok());
  EXPECT_EQ(next.state->overlay_size(), 1u) << "the tail is held, not applied";
  EXPECT_FALSE(next.get("a")) << "and not visible before it is committed";
  auto b2 = write(next, {{"a", "second"}, {"c", "x"}});
  EXPECT_EQ(kinds(b2), (std::vector<std::string>{"none", "insert"}))
      << "first_row saw the tail's row of a: the new write must not replace it";
  ASSERT_TRUE(next.state->apply_committed(next.log->log_end_offset()).ok());
  EXPECT_EQ(next.get("a"), "first");
  EXPECT_EQ(next.get("c"), "x");
  EXPECT_EQ(next.state->overlay_size(), 0u);
}

TEST_F(PkReplica, DemotedLeaderDropsHeldWritesAndFollowsTheLog) {
  Replica r(tmp_.sub("r"), env_, TableConfig{});
  ASSERT_TRUE(r.log->become_leader(1).ok());
  ASSERT_TRUE(r.state->lead().ok());
  write(r, {{"a", "committed"}});
  ASSERT_TRUE(r.state->apply_committed(1).ok());
  write(r, {{"a", "lost"}});  // never committed: the next leader does not have it
  ASSERT_TRUE(r.state->follow().ok());
  EXPECT_EQ(r.state->overlay_size(), 0u);
  ASSERT_TRUE(r.log->truncate_to(1).ok());  // divergence: back to the new leader's history
  // The new leader's changelog record for a (an update, as its compute would write it).
  std::vector<uint8_t> other;
  {
    Replica leader2(tmp_.sub("l2"), env_, TableConfig{});
    ASSERT_TRUE(leader2.log->become_leader(2).ok());
    ASSERT_TRUE(leader2.state->lead().ok());
    write(leader2, {{"pad", "p"}});                      // offset 0
    other = write(leader2, {{"a", "from-new-leader"}});  // offset 1
  }
  replicate(r, other);
  EXPECT_EQ(r.get("a"), "committed");
  ASSERT_TRUE(r.state->apply_committed(2).ok());
  EXPECT_EQ(r.get("a"), "from-new-leader");
}

TEST_F(PkReplica, StateAheadOfATruncatedLogIsReported) {
  Replica r(tmp_.sub("r"), env_, TableConfig{});
  ASSERT_TRUE(r.log->become_leader(1).ok());
  ASSERT_TRUE(r.state->lead().ok());
  write(r, {{"a", "1"}});
  write(r, {{"b", "1"}});
  ASSERT_TRUE(r.state->apply_committed(2).ok());
  ASSERT_TRUE(r.state->follow().ok());
  ASSERT_TRUE(r.log->truncate_to(1).ok());  // an unclean truncation below what was applied
  auto st = r.state->apply_committed(1);
  EXPECT_EQ(st.code(), Errc::corruption) << st.to_string();
}

TEST_F(PkReplica, OpenAppliesNothingPastThePersistedStateAndKeepsCheckpoints) {
  {
    Replica r(tmp_.sub("r"), env_, TableConfig{});
    ASSERT_TRUE(r.log->become_leader(1).ok());
    ASSERT_TRUE(r.state->lead().ok());
    write(r, {{"a", "1"}});
    ASSERT_TRUE(r.state->apply_committed(1).ok());
    ASSERT_TRUE(r.state->create_checkpoint().ok());
    write(r, {{"a", "2"}});  // logged, never committed
    ASSERT_TRUE(r.state->close().ok());
    ASSERT_TRUE(r.log->close().ok());
  }
  Replica again(tmp_.sub("r"), env_, TableConfig{});
  EXPECT_EQ(again.state->applied_offset(), 0) << "no replay past the persisted state";
  EXPECT_EQ(again.get("a"), "1");
  EXPECT_EQ(again.state->checkpoint_offsets(), (std::vector<int64_t>{0}))
      << "a replica's high watermark is unknown at open: checkpoints are checked against the log "
         "end";
  ASSERT_TRUE(again.state->follow().ok());
  ASSERT_TRUE(again.state->apply_committed(2).ok());
  EXPECT_EQ(again.get("a"), "2");
}

}  // namespace
}  // namespace strata::pkindex
