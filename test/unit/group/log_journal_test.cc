// LogGroupJournal on a real single-node log: an append is answered once the partition's high
// watermark passed it (fsynced: flush.messages=1), records replay in order after a reopen of the
// logs, writes queued meanwhile share a batch (each whole, in call order, its own last offset)
// while a write too large alone is refused without failing its neighbours, and the RocksDB store of
// earlier versions is migrated into the topic once (then renamed), after which a coordinator over
// the journal serves what the old store held.
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
#include "protocol/record/record_reader.h"
#include "storage/env.h"
#include "storage/log_manager.h"
#include "storage/log_scan.h"
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

// Eight threads each queue 300 writes of two records without waiting; the writer appends what
// queued up meanwhile as shared batches. Every write is answered none with the offset of its own
// last record, a thread's writes replay in its call order, each write's two records adjacent.
TEST(LogGroupJournal, QueuedWritesShareBatchesEachWholeInOrder) {
  constexpr int kThreads = 8;
  constexpr int kWrites = 300;
  struct Got {
    std::atomic<int> answered{0};
    std::vector<int64_t> last = std::vector<int64_t>(kWrites, -2);
    std::vector<protocol::ErrorCode> error =
        std::vector<protocol::ErrorCode>(kWrites, protocol::ErrorCode::unknown_server_error);
  };
  std::vector<Got> got(kThreads);  // before the node: its io thread may still write here
  storage::testing::TempDir dir;
  Node n(dir.sub("d"), 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kWrites; ++i) {
        const std::string k = std::to_string(t) + "/" + std::to_string(i);
        n.journal->append(0, {{k + "a", std::string("x")}, {k + "b", std::nullopt}},
                          [&g = got[t], i](protocol::ErrorCode e, int64_t last) {
                            g.error[i] = e;  // answers run on the one io thread
                            g.last[i] = last;
                            ++g.answered;
                          });
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (auto& g : got) {
    while (g.answered < kWrites && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ASSERT_EQ(g.answered, kWrites);
  }
  std::promise<void> drained;  // the answers' writes happened before this runs on the io thread
  boost::asio::post(n.io, [&] { drained.set_value(); });
  drained.get_future().wait();

  auto recs = n.replay(0);
  ASSERT_EQ(recs.size(), size_t{2 * kThreads * kWrites});
  std::vector<int> next(kThreads, 0);
  for (size_t off = 0; off < recs.size(); off += 2) {
    const std::string& k = recs[off].key;
    const auto slash = k.find('/');
    ASSERT_NE(slash, std::string::npos) << k;
    const int t = std::stoi(k.substr(0, slash));
    const int i = std::stoi(k.substr(slash + 1));
    ASSERT_EQ(i, next[t]++) << "thread " << t << "'s writes in call order";
    const std::string base = k.substr(0, k.size() - 1);
    EXPECT_EQ(k, base + "a");
    EXPECT_EQ(recs[off + 1].key, base + "b") << "a write's records adjacent";
    EXPECT_FALSE(recs[off + 1].value.has_value());
    EXPECT_EQ(got[t].error[i], protocol::ErrorCode::none);
    EXPECT_EQ(got[t].last[i], static_cast<int64_t>(off + 1)) << "its own last record's offset";
  }
  auto topic = n.topics->find(kOffsetsTopic);
  ASSERT_NE(topic, nullptr);
  storage::PartitionLog* log = topic->partition(0);
  EXPECT_EQ(log->recovery_point(), log->log_end_offset()) << "fsynced before answered";
  int batches = 0;
  protocol::RecordReader reader;
  protocol::Record r;
  ASSERT_TRUE(storage::for_each_batch(
                  *log, 0, log->log_end_offset(),
                  [&](const protocol::RecordBatchView& b) -> Status {
                    ++batches;
                    EXPECT_EQ(b.record_count() % 2, 0) << "no write split over two batches";
                    STRATA_RETURN_IF_ERROR(reader.reset(b));
                    auto more = reader.next(r);
                    EXPECT_TRUE(more.ok() && *more && r.key && r.key->back() == 'a')
                        << "a batch starts with a write's first record";
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_LT(batches, kThreads * kWrites) << "writes queued behind an fsync share its batch";
}

// How queued writes are split into batches: as many consecutive writes as fit, a write that does
// not fit starts the next batch, one too large alone is a batch of its own (refused when built).
TEST(LogGroupJournal, RunsFillBatchesUpToTheLimit) {
  const size_t h = protocol::batch_format::kHeaderSize;
  auto runs = [](std::vector<size_t> bytes, size_t max) { return journal_runs(bytes, max); };
  EXPECT_TRUE(runs({}, 100).empty());
  EXPECT_EQ(runs({10, 10, 10}, h + 30), (std::vector<size_t>{3}));
  EXPECT_EQ(runs({10, 10, 10}, h + 29), (std::vector<size_t>{2, 3}));
  EXPECT_EQ(runs({10, 500, 10, 10}, h + 30), (std::vector<size_t>{1, 2, 4}));
  EXPECT_EQ(runs({500, 10}, h + 30), (std::vector<size_t>{1, 2}));
  EXPECT_EQ(runs({500, 600}, h + 30), (std::vector<size_t>{1, 2}));
}

// A write larger than max.message.bytes alone is refused (Kafka: INVALID_COMMIT_OFFSET_SIZE);
// the writes queued around it are written, and the limit holds for shared batches too.
TEST(LogGroupJournal, OversizedWriteRefusedAlone) {
  storage::testing::TempDir dir;
  Node n(dir.sub("d"), 1);
  auto topic = n.journal->local_topic(true);
  ASSERT_NE(topic, nullptr);
  const auto max = static_cast<size_t>(topic->config.max_message_bytes);
  std::vector<std::promise<std::pair<protocol::ErrorCode, int64_t>>> done(5);
  auto answer = [&](size_t i) {
    return [&, i](protocol::ErrorCode e, int64_t last) { done[i].set_value({e, last}); };
  };
  const std::string third(max / 3, 'v');  // three of these exceed the limit together
  n.journal->append(0, {{"small", std::string("1")}}, answer(0));
  n.journal->append(0, {{"huge", std::string(max, 'x')}}, answer(1));
  n.journal->append(0, {{"t1", third}}, answer(2));
  n.journal->append(0, {{"t2", third}}, answer(3));
  n.journal->append(0, {{"t3", third}}, answer(4));
  std::vector<std::pair<protocol::ErrorCode, int64_t>> r;
  for (auto& d : done) r.push_back(d.get_future().get());
  EXPECT_EQ(r[0], std::make_pair(protocol::ErrorCode::none, int64_t{0}));
  EXPECT_EQ(r[1].first, protocol::ErrorCode::invalid_commit_offset_size);
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(r[i], std::make_pair(protocol::ErrorCode::none, int64_t{i - 1})) << i;
  }
  auto recs = n.replay(0);
  ASSERT_EQ(recs.size(), 4u);
  EXPECT_EQ(recs[0].key, "small");
  EXPECT_EQ(recs[1].key, "t1");
  EXPECT_EQ(recs[3].key, "t3");
  storage::PartitionLog* log = topic->partition(0);
  ASSERT_TRUE(storage::for_each_batch(*log, 0, log->log_end_offset(),
                                      [&](const protocol::RecordBatchView& b) {
                                        EXPECT_LE(b.size_bytes(), max);
                                        return Status::Ok();
                                      })
                  .ok());
}

// What a splitting writer may put in one write: a write of exactly max_write_bytes() (by
// encoded_bound) fits one batch; one well past it does not.
TEST(LogGroupJournal, MaxWriteBytesFitsOneBatch) {
  storage::testing::TempDir dir;
  Node n(dir.sub("d"), 1);
  ASSERT_NE(n.journal->local_topic(true), nullptr);
  const size_t limit = n.journal->max_write_bytes();
  ASSERT_LT(limit, size_t{1} << 30);
  auto write = [&](size_t bound) {
    JournalRecord r{"k", std::string(bound - 1 - 32, 'v')};
    EXPECT_EQ(encoded_bound(r), bound);
    std::promise<protocol::ErrorCode> done;
    n.journal->append(0, {std::move(r)},
                      [&](protocol::ErrorCode e, int64_t) { done.set_value(e); });
    return done.get_future().get();
  };
  EXPECT_EQ(write(limit), protocol::ErrorCode::none);
  // The bound overestimates this record's encoding by ~21 bytes: 64 more puts the batch over.
  EXPECT_EQ(write(limit + 64), protocol::ErrorCode::invalid_commit_offset_size);
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
