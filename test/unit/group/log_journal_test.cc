// LogGroupJournal on a real single-node log: an append is answered once the partition's high
// watermark passed it (fsynced: flush.messages=1), records replay in order after a reopen of the
// logs, and the RocksDB store of earlier versions is migrated into the topic once (then renamed),
// after which a coordinator over the journal serves what the old store held.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <future>
#include <thread>

#include "broker/config/config.h"
#include "broker/config/topic_config.h"
#include "broker/group/group_coordinator.h"
#include "broker/group/legacy_group_store.h"
#include "broker/group/log_group_journal.h"
#include "broker/topics/partition_watchers.h"
#include "storage/env.h"
#include "storage/log_manager.h"
#include "test/unit/group/fake_timers.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::group {
namespace {

// A single node's logs, topics and I/O thread, reopenable over the same directory.
struct Node {
  explicit Node(const std::string& dir, int32_t partitions = 4) : config(*parse_config("", {})) {
    auto l = storage::LogManager::open(
        storage::default_env(), {dir}, 1, [this](const storage::TopicMeta& meta) {
          return resolve_topic_config(meta.configs, config).log;  // as the broker does
        });
    EXPECT_TRUE(l.ok()) << l.status().to_string();
    logs = std::move(*l);
    topics = std::make_unique<TopicRegistry>(*logs, config);
    EXPECT_TRUE(topics->load().ok());
    OffsetsTopicOptions o;
    o.partitions = partitions;
    journal = std::make_unique<LogGroupJournal>(o, *topics, watchers, io, nullptr);
    io_thread = std::thread([this] { io.run(); });
  }
  ~Node() {
    journal->stop();
    work.reset();
    io.stop();
    io_thread.join();
    journal.reset();
    topics.reset();
    (void)logs->close_all();
  }
  // Appends and waits for the answer.
  std::pair<protocol::ErrorCode, int64_t> append(int32_t p, std::vector<JournalRecord> recs) {
    std::promise<std::pair<protocol::ErrorCode, int64_t>> done;
    journal->append(p, std::move(recs), [&](protocol::ErrorCode e, int64_t last) {
      done.set_value({e, last});
    });
    return done.get_future().get();
  }
  std::vector<JournalRecord> replay(int32_t p) {
    std::vector<JournalRecord> out;
    EXPECT_TRUE(journal
                    ->replay(p,
                             [&](const JournalRecord& r) {
                               out.push_back(r);
                               return Status::Ok();
                             })
                    .ok());
    return out;
  }

  BrokerConfig config;
  std::unique_ptr<storage::LogManager> logs;
  std::unique_ptr<TopicRegistry> topics;
  PartitionWatchers watchers;
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::unique_ptr<LogGroupJournal> journal;
  std::thread io_thread;
};

TEST(LogGroupJournal, AppendAnsweredWhenDurableAndReplayedAfterReopen) {
  storage::testing::TempDir dir;
  {
    Node n(dir.sub("d"));
    EXPECT_EQ(n.topics->find(kOffsetsTopic), nullptr) << "created on first use only";
    EXPECT_TRUE(n.replay(1).empty());
    auto [e1, last1] = n.append(1, {{"k1", std::string("v1")}, {"k2", std::string("v2")}});
    EXPECT_EQ(e1, protocol::ErrorCode::none);
    EXPECT_EQ(last1, 1);
    auto [e2, last2] = n.append(1, {{"k1", std::nullopt}});
    EXPECT_EQ(e2, protocol::ErrorCode::none);
    EXPECT_EQ(last2, 2);
    auto topic = n.topics->find(kOffsetsTopic);
    ASSERT_NE(topic, nullptr);
    EXPECT_EQ(topic->partitions.size(), 4u);
    EXPECT_EQ(topic->configs.at("cleanup.policy"), "compact");
    EXPECT_EQ(topic->partition(1)->high_watermark(), 3);
    EXPECT_EQ(topic->partition(1)->recovery_point(), 3) << "fsynced before answered";
    EXPECT_EQ(n.append(9, {{"k", std::string("v")}}).first, protocol::ErrorCode::not_coordinator);
  }
  Node n(dir.sub("d"), 7);
  EXPECT_EQ(n.journal->partitions(), 4)
      << "the existing topic's partition count, not a changed offsets.topic.num.partitions";
  auto recs = n.replay(1);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].key, "k1");
  EXPECT_EQ(recs[0].value, std::optional<std::string>("v1"));
  EXPECT_EQ(recs[1].key, "k2");
  EXPECT_EQ(recs[2].key, "k1");
  EXPECT_FALSE(recs[2].value.has_value()) << "a tombstone stays a tombstone";
  EXPECT_TRUE(n.replay(0).empty());
}

TEST(LogGroupJournal, LegacyStoreIsMigratedOnceAndServed) {
  storage::testing::TempDir dir;
  const std::string legacy = dir.sub("d") + "/__strata_groups";
  std::filesystem::create_directories(dir.sub("d"));
  OffsetEntry e;
  e.offset = 41;
  e.commit_ms = 1;
  {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(o, legacy, &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    for (const char* g : {"alpha", "beta", "gamma"}) {
      ASSERT_TRUE(
          db->Put({}, records::offset_key({g, "orders", 2}), records::encode_offset(e)).ok());
    }
  }
  {
    Node n(dir.sub("d"));
    ASSERT_TRUE(migrate_legacy_group_store(legacy, *n.journal).ok());
    EXPECT_FALSE(std::filesystem::exists(legacy));
    EXPECT_TRUE(std::filesystem::exists(legacy + ".migrated"));
    ASSERT_TRUE(migrate_legacy_group_store(legacy, *n.journal).ok()) << "nothing left to do";
    size_t total = 0;
    for (int32_t p = 0; p < 4; ++p) total += n.replay(p).size();
    EXPECT_EQ(total, 3u) << "copied once";
  }
  Node n(dir.sub("d"));
  testing::FakeTimers timers;
  GroupCoordinator c(CoordinatorConfig{}, timers, n.journal.get());
  ASSERT_TRUE(c.own_all_now().ok());
  for (const char* g : {"alpha", "beta", "gamma"}) {
    std::vector<FetchedPartition> got;
    ASSERT_EQ(c.fetch_offsets(g, std::nullopt, got), protocol::ErrorCode::none);
    ASSERT_EQ(got.size(), 1u) << g;
    EXPECT_EQ(got[0].topic, "orders");
    EXPECT_EQ(got[0].partition, 2);
    EXPECT_EQ(got[0].offset, 41);
  }
  c.shutdown();
}

}  // namespace
}  // namespace strata::broker::group
