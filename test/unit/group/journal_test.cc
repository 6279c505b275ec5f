// The coordinator over its journal: groups and offsets survive a reload (a restart or a new
// leader of the partition); partitions it does not own answer NOT_COORDINATOR, partitions being
// loaded COORDINATOR_LOAD_IN_PROGRESS; a commit is answered (and visible) only once its record is
// durable; tombstones make deletions survive; Kafka's partition rule; and a model-based run of
// random operations and ownership moves checked against a plain map.
#include <rocksdb/db.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "broker/group/group_records.h"
#include "broker/group/legacy_group_store.h"
#include "test/unit/group/group_test_util.h"

namespace strata::broker::group::testing {
namespace {

CommitPartition cp(const std::string& topic, int32_t p, int64_t offset,
                   std::optional<std::string> md = std::nullopt) {
  return CommitPartition{topic, p, offset, 4, std::move(md), ErrorCode::none};
}

class JournalTest : public CoordinatorTest {
 protected:
  void SetUp() override {
    cfg_.initial_rebalance_delay_ms = 0;
    make(&journal_store_);
  }
  // A new coordinator over the same journal (a restart, or another broker taking over).
  void reopen() {
    c_.reset();
    make(&journal_store_);
  }
  std::map<std::pair<std::string, int32_t>, int64_t> offsets_of(const std::string& group) {
    std::vector<FetchedPartition> got;
    EXPECT_EQ(c_->fetch_offsets(group, std::nullopt, got), ErrorCode::none);
    std::map<std::pair<std::string, int32_t>, int64_t> out;
    for (const auto& f : got) out[{f.topic, f.partition}] = f.offset;
    return out;
  }
  FakeJournal journal_store_{8};
};

TEST(GroupPartition, JavaStringHashAndKafkaRule) {
  // Reference values from Java's String.hashCode (UTF-16 code units).
  EXPECT_EQ(java_string_hash(""), 0);
  EXPECT_EQ(java_string_hash("hello"), 99162322);
  EXPECT_EQ(java_string_hash("my-group"), -1906497762);
  EXPECT_EQ(java_string_hash("gr\xc3\xbcppe"), -1233264812);  // "grüppe"
  EXPECT_EQ(java_string_hash("g\xf0\x9f\x98\x80"), 1871882);  // "g😀": a surrogate pair
  EXPECT_EQ(partition_for_group("a", 50), 47);
  EXPECT_EQ(partition_for_group("my-group", 50), 12);
  EXPECT_EQ(partition_for_group("console-consumer-12345", 50), 6);
  // hashCode == INT_MIN: Kafka's Utils.abs maps it to 0, not to a negative partition.
  EXPECT_EQ(java_string_hash("polygenelubricants"), INT32_MIN);
  EXPECT_EQ(partition_for_group("polygenelubricants", 50), 0);
  EXPECT_EQ(partition_for_group("\xff\xfe", 7), partition_for_group("\xef\xbf\xbd\xef\xbf\xbd", 7));
}

TEST_F(JournalTest, GroupAndOffsetsSurviveReload) {
  auto [a, gen] = stable_single();
  auto parts = commit(group_, gen, a, {cp("t1", 0, 123, std::string("md-\xe2\x9c\x93"))});
  EXPECT_EQ(parts[0].error, ErrorCode::none);
  parts = commit("simple", -1, "", {cp("t2", 3, 9)});
  EXPECT_EQ(parts[0].error, ErrorCode::none);
  reopen();

  EXPECT_EQ(c_->state_of(group_), GroupState::stable);
  EXPECT_EQ(c_->generation_of(group_), gen);
  EXPECT_EQ(heartbeat(a, gen), ErrorCode::none);  // the member carries on after the move
  GroupSummary s = c_->describe(group_);
  ASSERT_EQ(s.members.size(), 1u);
  EXPECT_EQ(s.members[0].assignment, Bytes{7});
  std::vector<FetchedPartition> got;
  c_->fetch_offsets(group_, std::nullopt, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].offset, 123);
  EXPECT_EQ(got[0].leader_epoch, 4);
  EXPECT_EQ(got[0].metadata, "md-\xe2\x9c\x93");
  EXPECT_EQ(offsets_of("simple"),
            (std::map<std::pair<std::string, int32_t>, int64_t>{{{"t2", 3}, 9}}));

  // No heartbeats: the restored member's session ends and the group empties, durably.
  timers_.advance(6001);
  journal_store_.drain();
  EXPECT_EQ(c_->state_of(group_), GroupState::empty);
  EXPECT_EQ(c_->generation_of(group_), gen + 1);
  reopen();
  EXPECT_EQ(c_->state_of(group_), GroupState::empty);
  EXPECT_EQ(c_->generation_of(group_), gen + 1);
}

TEST_F(JournalTest, DeletionsWriteTombstonesThatSurviveReload) {
  std::vector<CommitPartition> two{cp("t1", 0, 1), cp("t2", 0, 2)};
  commit("s1", -1, "", two);
  commit("s2", -1, "", two);
  std::optional<ErrorCode> deleted;
  c_->delete_group("s1", [&](ErrorCode e) { deleted = e; });
  EXPECT_FALSE(deleted.has_value()) << "answered once the tombstones are durable";
  journal_store_.drain();
  EXPECT_EQ(deleted, ErrorCode::none);
  // Tombstones that fail: their error is the answer, and the next load has the offsets again.
  std::optional<ErrorCode> offsets_deleted;
  journal_store_.fail_appends_with = ErrorCode::not_coordinator;
  c_->delete_offsets("s2", {{"t2", 0, ErrorCode::none}},
                     [&](ErrorCode e, std::vector<TopicPartitionError>) { offsets_deleted = e; });
  EXPECT_FALSE(offsets_deleted.has_value());
  journal_store_.drain();
  EXPECT_EQ(offsets_deleted, ErrorCode::not_coordinator);
  journal_store_.fail_appends_with = ErrorCode::none;
  c_->on_topic_deleted("t1");
  journal_store_.drain();
  const auto& log = journal_store_.log(c_->partition_for("s1"));
  ASSERT_FALSE(log.empty());
  EXPECT_FALSE(log.back().value.has_value()) << "the group's own record ends as a tombstone";
  EXPECT_EQ(log.back().key, records::group_key("s1"));
  reopen();
  EXPECT_TRUE(offsets_of("s1").empty());
  EXPECT_EQ(offsets_of("s2"), (std::map<std::pair<std::string, int32_t>, int64_t>{{{"t2", 0}, 2}}));
}

// A group whose tombstones outgrow one batch of the offsets topic (a small max.message.bytes):
// they are written in several writes that each fit, and the deletion holds after a reload.
TEST_F(JournalTest, TombstonesOfALargeGroupFitTheTopicsBatchLimit) {
  std::vector<CommitPartition> many;
  for (int32_t p = 0; p < 40; ++p) many.push_back(cp("a-topic-with-a-long-name", p, p));
  ASSERT_EQ(commit("big", -1, "", many).size(), 40u);
  ASSERT_EQ(offsets_of("big").size(), 40u);
  const auto& log = journal_store_.log(c_->partition_for("big"));
  const size_t before = log.size();
  journal_store_.max_write = 600;  // a few tombstones per write; all of them ≈ 3 KiB
  const int appends_before = journal_store_.appends;
  std::optional<ErrorCode> deleted;
  c_->delete_group("big", [&](ErrorCode e) { deleted = e; });
  journal_store_.drain();
  EXPECT_EQ(deleted, ErrorCode::none);
  EXPECT_GT(journal_store_.appends - appends_before, 2) << "split into several writes";
  ASSERT_EQ(log.size(), before + 41) << "a tombstone per offset, then the group's";
  for (size_t i = before; i < log.size(); ++i) EXPECT_FALSE(log[i].value.has_value());
  EXPECT_EQ(log.back().key, records::group_key("big"));
  reopen();
  EXPECT_TRUE(offsets_of("big").empty());
  EXPECT_FALSE(c_->state_of("big").has_value()) << "the group is gone too";
}

// A commit still being written when its group (or its offset) is deleted: the commit is answered,
// but neither memory nor a reload brings back what the deletion was answered for.
TEST_F(JournalTest, DeletionsCoverCommitsStillBeingWritten) {
  using Offsets = std::map<std::pair<std::string, int32_t>, int64_t>;
  commit("s", -1, "", {cp("t", 0, 1)});
  std::optional<std::vector<CommitPartition>> out;
  auto answered = [&](std::vector<CommitPartition> r) { out = std::move(r); };
  c_->commit("s", -1, "", std::nullopt, -1, {cp("t", 1, 7)}, answered);
  std::optional<ErrorCode> deleted;
  c_->delete_group("s", [&](ErrorCode e) { deleted = e; });
  journal_store_.drain();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ((*out)[0].error, ErrorCode::none);
  EXPECT_EQ(deleted, ErrorCode::none);
  EXPECT_TRUE(offsets_of("s").empty()) << "the group is not created again by the late commit";

  commit("s2", -1, "", {cp("t", 0, 1)});
  out.reset();
  c_->commit("s2", -1, "", std::nullopt, -1, {cp("t", 1, 9)}, answered);
  std::optional<ErrorCode> offsets_deleted;
  c_->delete_offsets("s2", {{"t", 1, ErrorCode::none}},
                     [&](ErrorCode e, std::vector<TopicPartitionError>) { offsets_deleted = e; });
  journal_store_.drain_reversed();  // the tombstone answered before the commit
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ((*out)[0].error, ErrorCode::none);
  EXPECT_EQ(offsets_deleted, ErrorCode::none);
  EXPECT_EQ(offsets_of("s2"), (Offsets{{{"t", 0}, 1}}));
  // A commit after the deletion lands again.
  commit("s2", -1, "", {cp("t", 1, 10)});
  EXPECT_EQ(offsets_of("s2"), (Offsets{{{"t", 0}, 1}, {{"t", 1}, 10}}));
  reopen();
  EXPECT_TRUE(offsets_of("s").empty()) << "the tombstones follow the commit in the log";
  EXPECT_EQ(offsets_of("s2"), (Offsets{{{"t", 0}, 1}, {{"t", 1}, 10}}));
}

// A group with more offsets than one batch may hold is deleted in several writes, answered once
// all of them are durable.
TEST_F(JournalTest, ManyOffsetsAreDeletedInSeveralWrites) {
  const std::string topic(200, 't');
  std::vector<CommitPartition> parts;
  for (int32_t p = 0; p < 2000; ++p) parts.push_back(cp(topic, p, p));
  commit("big", -1, "", parts);
  EXPECT_EQ(offsets_of("big").size(), 2000u);
  const int before = journal_store_.appends;
  std::optional<ErrorCode> deleted;
  c_->delete_group("big", [&](ErrorCode e) { deleted = e; });
  EXPECT_GE(journal_store_.appends - before, 2) << "~420 KB of tombstones in writes of 256 KiB";
  EXPECT_FALSE(deleted.has_value());
  journal_store_.drain();
  EXPECT_EQ(deleted, ErrorCode::none);
  reopen();
  EXPECT_TRUE(offsets_of("big").empty());
}

TEST_F(JournalTest, CommitIsAnsweredAndVisibleOnlyOnceDurable) {
  std::optional<std::vector<CommitPartition>> out;
  c_->commit("s", -1, "", std::nullopt, -1, {cp("t", 0, 5)},
             [&](std::vector<CommitPartition> r) { out = std::move(r); });
  EXPECT_FALSE(out.has_value());
  EXPECT_TRUE(offsets_of("s").empty()) << "not durable yet: not visible";
  journal_store_.drain();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ((*out)[0].error, ErrorCode::none);
  EXPECT_EQ(offsets_of("s").at({"t", 0}), 5);

  // A failed write answers the journal's error and changes nothing.
  journal_store_.fail_appends_with = ErrorCode::coordinator_not_available;
  auto parts = commit("s", -1, "", {cp("t", 0, 6)});
  EXPECT_EQ(parts[0].error, ErrorCode::coordinator_not_available);
  EXPECT_EQ(offsets_of("s").at({"t", 0}), 5);
  journal_store_.fail_appends_with = ErrorCode::none;

  // Two commits completing out of order: the newer record wins, as it does on reload.
  std::vector<CommitPartition> r1, r2;
  c_->commit("s", -1, "", std::nullopt, -1, {cp("t", 0, 7)},
             [&](std::vector<CommitPartition> r) { r1 = std::move(r); });
  c_->commit("s", -1, "", std::nullopt, -1, {cp("t", 0, 8)},
             [&](std::vector<CommitPartition> r) { r2 = std::move(r); });
  journal_store_.drain_reversed();
  ASSERT_EQ(r1.size(), 1u);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(offsets_of("s").at({"t", 0}), 8);
  reopen();
  EXPECT_EQ(offsets_of("s").at({"t", 0}), 8);
}

TEST_F(JournalTest, LeaderSyncWaitsForItsRecordAndFailsWithTheJournal) {
  JoinResult r = join_now(params(""));
  auto s = sync(r.member_id, r.generation, {{r.member_id, {9}}});
  EXPECT_FALSE(s->has_value()) << "answered before the assignment is durable";
  journal_store_.drain();
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ((*s)->error, ErrorCode::none);
  EXPECT_EQ((*s)->assignment, Bytes{9});

  // A rejoin whose assignment cannot be stored: the sync fails and the group rebalances.
  journal_store_.fail_appends_with = ErrorCode::not_coordinator;
  auto j = join(params(r.member_id));
  timers_.advance(0);
  ASSERT_TRUE(j->has_value());
  auto s2 = sync(r.member_id, (*j)->generation, {{r.member_id, {1}}});
  journal_store_.drain();
  ASSERT_TRUE(s2->has_value());
  EXPECT_EQ((*s2)->error, ErrorCode::not_coordinator);
  EXPECT_EQ(c_->state_of(group_), GroupState::preparing_rebalance);
}

// Before the offsets topic exists its partition count may still change (it follows the broker's
// setting until then), so the coordinator asks the journal each time; once the journal says the
// count is fixed the coordinator keeps it and stops asking.
TEST(GroupPartitionCount, CachedOnceTheJournalSaysItIsFixed) {
  FakeJournal j(4);
  j.fixed = false;
  FakeTimers timers;
  GroupCoordinator c(CoordinatorConfig{}, timers, &j);
  std::string g = "g";
  while (partition_for_group(g, 4) == partition_for_group(g, 8)) g += "x";
  EXPECT_EQ(c.partition_for(g), partition_for_group(g, 4));
  j.resize(8);
  EXPECT_EQ(c.partition_for(g), partition_for_group(g, 8)) << "not fixed yet: follows the journal";
  j.fixed = true;
  EXPECT_EQ(c.partition_for(g), partition_for_group(g, 8));
  const int asked = j.partitions_asked;
  j.resize(16);  // cannot happen to a created topic: shows that the count is not asked again
  for (int i = 0; i < 100; ++i) EXPECT_EQ(c.partition_for(g), partition_for_group(g, 8));
  EXPECT_EQ(j.partitions_asked, asked);
}

TEST_F(JournalTest, OwnershipDecidesWhoAnswers) {
  auto [a, gen] = stable_single();
  commit(group_, gen, a, {cp("t1", 0, 11)});
  const int32_t p = c_->partition_for(group_);
  // A join waiting for the rebalance when leadership moves away is answered NOT_COORDINATOR.
  auto waiting = join(params(""));
  c_->release_partition(p);
  ASSERT_TRUE(waiting->has_value());
  EXPECT_EQ((*waiting)->error, ErrorCode::not_coordinator);
  EXPECT_EQ(heartbeat(a, gen), ErrorCode::not_coordinator);
  std::vector<FetchedPartition> got;
  EXPECT_EQ(c_->fetch_offsets(group_, std::nullopt, got), ErrorCode::not_coordinator);
  EXPECT_EQ(commit(group_, gen, a, {cp("t1", 0, 12)})[0].error, ErrorCode::not_coordinator);
  EXPECT_EQ(c_->describe(group_).error, ErrorCode::not_coordinator);
  EXPECT_TRUE(c_->list().empty()) << "its groups left memory";

  // Owned again: loading first (COORDINATOR_LOAD_IN_PROGRESS), then served from the journal.
  c_->own_partition(p);
  EXPECT_EQ(heartbeat(a, gen), ErrorCode::coordinator_load_in_progress);
  EXPECT_EQ(c_->fetch_offsets(group_, std::nullopt, got), ErrorCode::coordinator_load_in_progress);
  EXPECT_EQ(c_->owned_partitions().second, 1u);
  journal_store_.drain();
  EXPECT_EQ(heartbeat(a, gen), ErrorCode::none);
  EXPECT_EQ(offsets_of(group_).at({"t1", 0}), 11);

  // A commit in flight when leadership moves is not acknowledged, even if its write completes.
  std::optional<std::vector<CommitPartition>> out;
  c_->commit(group_, gen, a, std::nullopt, -1, {cp("t1", 0, 13)},
             [&](std::vector<CommitPartition> r) { out = std::move(r); });
  c_->release_partition(p);
  journal_store_.drain();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ((*out)[0].error, ErrorCode::not_coordinator);

  // Groups of other partitions were never affected; a load that is overtaken by a release is
  // dropped.
  std::string other = "other";
  while (c_->partition_for(other) == p) other += "x";
  EXPECT_EQ(commit(other, -1, "", {cp("t", 1, 1)})[0].error, ErrorCode::none);
  c_->own_partition(p);
  c_->release_partition(p);
  journal_store_.drain();
  EXPECT_EQ(heartbeat(a, gen), ErrorCode::not_coordinator);
}

// Random commits, deletions, expiries and ownership moves against a model: after every step the
// coordinator's committed offsets equal the model's, and after every reload as well.
TEST_F(JournalTest, ModelBasedRandomOperationsAndReloads) {
  std::mt19937 rng(20261202);
  using Offsets = std::map<std::pair<std::string, int32_t>, int64_t>;
  std::map<std::string, Offsets> model;
  const std::vector<std::string> groups{"g0", "g1", "g2", "g3", "g4", "g5"};
  const std::vector<std::string> topics{"ta", "tb"};
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  for (int step = 0; step < 1500; ++step) {
    const int op = static_cast<int>(rng() % 100);
    const std::string g = pick(groups);
    if (op < 55) {
      std::vector<CommitPartition> parts;
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        parts.push_back(cp(pick(topics), static_cast<int32_t>(rng() % 3), step));
      }
      auto res = commit(g, -1, "", parts);
      for (const auto& r : res) {
        ASSERT_EQ(r.error, ErrorCode::none);
        model[g][{r.topic, r.partition}] = r.offset;
      }
    } else if (op < 62) {
      const ErrorCode e = delete_group(g);  // offsets-only groups are Empty: deletable
      EXPECT_TRUE(e == ErrorCode::none || e == ErrorCode::group_id_not_found)
          << protocol::error_name(e);
      model.erase(g);
    } else if (op < 70) {
      const std::string t = pick(topics);
      std::vector<TopicPartitionError> del{{t, 0, ErrorCode::none}, {t, 1, ErrorCode::none}};
      (void)delete_offsets(g, del);
      model[g].erase({t, 0});
      model[g].erase({t, 1});
    } else if (op < 75) {
      const std::string t = pick(topics);
      c_->on_topic_deleted(t);
      for (auto& [id, offs] : model) {
        for (int32_t p = 0; p < 3; ++p) offs.erase({t, p});
      }
    } else if (op < 85) {
      const int32_t p = c_->partition_for(g);
      c_->release_partition(p);
      c_->own_partition(p);
      journal_store_.drain();
    } else if (op < 90) {
      reopen();
    } else {
      std::vector<CommitPartition> parts{cp(pick(topics), 0, -step)};
      journal_store_.fail_appends_with = ErrorCode::coordinator_not_available;
      EXPECT_EQ(commit(g, -1, "", parts)[0].error, ErrorCode::coordinator_not_available);
      journal_store_.fail_appends_with = ErrorCode::none;
    }
    journal_store_.drain();
    for (const auto& id : groups) {
      Offsets want = model.count(id) ? model[id] : Offsets{};
      ASSERT_EQ(offsets_of(id), want) << "group " << id << " after step " << step;
    }
  }
  reopen();
  for (const auto& id : groups) EXPECT_EQ(offsets_of(id), model[id]) << id;
}

// The RocksDB store of earlier versions holds the journal's records: reading it back and folding
// the records gives the groups it held (the migration copies exactly these records).
TEST(LegacyGroupStore, RecordsReadBackFoldIntoTheGroups) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("strata-legacy-groups-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Group g;
  g.id = "legacy";
  g.generation = 5;
  g.protocol_type = "consumer";
  g.protocol_name = "range";
  g.leader = "m1";
  Member m;
  m.member_id = "m1";
  m.client_id = "c";
  m.client_host = "/127.0.0.1";
  m.session_timeout_ms = 10000;
  m.rebalance_timeout_ms = 10000;
  m.protocol_type = "consumer";
  m.assignment = {1, 2};
  g.members.emplace("m1", m);
  OffsetEntry e;
  e.offset = 77;
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, dir.string(), &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    ASSERT_TRUE(db->Put({}, records::group_key("legacy"), records::encode_group(g)).ok());
    ASSERT_TRUE(
        db->Put({}, records::offset_key({"legacy", "t", 2}), records::encode_offset(e)).ok());
    ASSERT_TRUE(
        db->Put({}, records::offset_key({"simple", "u", 0}), records::encode_offset(e)).ok());
  }
  auto recs = read_legacy_group_store(dir.string());
  ASSERT_TRUE(recs.ok()) << recs.status().to_string();
  ASSERT_EQ(recs->size(), 3u);
  std::map<std::string, Group> groups;
  for (const auto& r : *recs) {
    EXPECT_TRUE(records::group_of(r.key).has_value());
    ASSERT_TRUE(records::apply(groups, r.key, std::string_view(*r.value)).ok());
  }
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups["legacy"].generation, 5);
  EXPECT_EQ(groups["legacy"].state, GroupState::stable);
  EXPECT_EQ(groups["legacy"].members.at("m1").assignment, (Bytes{1, 2}));
  EXPECT_EQ((groups["legacy"].offsets.at({"t", 2}).offset), 77);
  EXPECT_EQ((groups["simple"].offsets.at({"u", 0}).offset), 77);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace strata::broker::group::testing
