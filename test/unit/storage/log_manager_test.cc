// LogManager: topic metadata survives reopen, placement across log dirs, partition.metadata,
// meta.properties checks, delete removes files, orphan cleanup.
#include "storage/log_manager.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "protocol/wire/uuid.h"
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/meta_properties.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT
namespace fs = std::filesystem;

TopicId id_of(uint8_t seed) {
  TopicId id{};
  for (size_t i = 0; i < id.size(); ++i) id[i] = static_cast<uint8_t>(seed + i);
  return id;
}

std::unique_ptr<LogManager> open_mgr(Env* env, std::vector<std::string> dirs, int32_t node = 1) {
  auto m = LogManager::open(env, std::move(dirs), node, nullptr);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? std::move(*m) : nullptr;
}

TEST(LogManager, WriteBackThreadWritesBackActiveSegmentsAndStopsAtClose) {
  TempDir tmp;
  FaultInjectionEnv env;  // counts write-backs
  auto m = open_mgr(&env, {tmp.sub("d1")});
  ASSERT_TRUE(m->create_topic("wb", 2, {}, id_of(7)).ok());
  m->start_write_back(4 << 10);
  append_n(*m->partition("wb", 1), 10, 1000, 0, 1000);  // ~10 KiB: past the step
  append_n(*m->partition("wb", 0), 1, 1000, 0, 100);    // below it
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (m->partition("wb", 1)->written_back_bytes() == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no write-back within 20 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(m->partition("wb", 0)->written_back_bytes(), 0u);
  const std::string p0 = segment_log_path(m->partition("wb", 0)->dir(), 0);
  const std::string p1 = segment_log_path(m->partition("wb", 1)->dir(), 0);
  EXPECT_EQ(env.write_backs(p1), 1);
  EXPECT_EQ(env.write_backs(p0), 0);
  ASSERT_TRUE(m->close_all().ok());  // joins the thread (a hang fails the test by its timeout)
}

TEST(LogManager, TopicsSurviveReopen) {
  TempDir tmp;
  const std::vector<std::string> dirs = {tmp.sub("d1"), tmp.sub("d2")};
  std::string cluster;
  {
    auto m = open_mgr(default_env(), dirs);
    cluster = m->cluster_id();
    EXPECT_EQ(cluster.size(), 22u);
    auto t = m->create_topic("orders", 3, {{"cleanup.policy", "delete"}}, id_of(1));
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->partitions, 3);
    EXPECT_GT(t->created_ms, 0);
    ASSERT_TRUE(m->create_topic("audit.log_v2", 1, {}, id_of(50)).ok());
    EXPECT_EQ(append_n(*m->partition("orders", 2), 4), 0);
    EXPECT_EQ(append_n(*m->partition("orders", 2), 1), 4);
    ASSERT_TRUE(m->close_all().ok());
  }
  auto m = open_mgr(default_env(), dirs);
  EXPECT_EQ(m->cluster_id(), cluster);
  auto topics = m->list_topics();
  ASSERT_EQ(topics.size(), 2u);
  EXPECT_EQ(topics[0].name, "audit.log_v2");
  EXPECT_EQ(topics[1].name, "orders");
  auto orders = m->find_topic("orders");
  ASSERT_TRUE(orders.has_value());
  EXPECT_EQ(orders->topic_id, id_of(1));
  EXPECT_EQ(orders->partitions, 3);
  EXPECT_EQ(orders->configs.at("cleanup.policy"), "delete");
  EXPECT_EQ(m->find_topic_by_id(id_of(50))->name, "audit.log_v2");
  EXPECT_FALSE(m->find_topic_by_id(id_of(99)).has_value());
  ASSERT_NE(m->partition("orders", 2), nullptr);
  EXPECT_EQ(m->partition("orders", 2)->log_end_offset(), 5);
  EXPECT_EQ(m->partition("orders", 3), nullptr);
  EXPECT_EQ(m->partition("nope", 0), nullptr);
}

// Partitions are opened and closed by several threads (num.recovery.threads.per.data.dir): every
// one ends where it was, is closed cleanly, and a partition that cannot be opened fails the
// open as a whole (no hang, no crash) whichever thread meets it.
TEST(LogManager, ParallelOpenAndCloseKeepEveryPartition) {
  TempDir tmp;
  const std::vector<std::string> dirs = {tmp.sub("d1"), tmp.sub("d2")};
  auto open_with = [&](int threads) {
    return LogManager::open(default_env(), dirs, 1, nullptr, nullptr, threads);
  };
  constexpr int kTopics = 3, kParts = 20;
  auto name = [](int t) { return std::string("t") + static_cast<char>('a' + t); };
  {
    auto m = open_with(3);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    for (int t = 0; t < kTopics; ++t) {
      ASSERT_TRUE((*m)->create_topic(name(t), kParts, {}, id_of(static_cast<uint8_t>(t))).ok());
      for (int p = 0; p < kParts; ++p) append_n(*(*m)->partition(name(t), p), p % 5 + 1);
    }
    ASSERT_TRUE((*m)->close_all().ok());
  }
  for (int t = 0; t < kTopics; ++t) {
    for (int p = 0; p < kParts; ++p) {
      const std::string d =
          (fs::exists(tmp.sub("d1/" + name(t) + "-" + std::to_string(p))) ? tmp.sub("d1/")
                                                                          : tmp.sub("d2/")) +
          name(t) + "-" + std::to_string(p);
      EXPECT_TRUE(fs::exists(d + "/clean-shutdown")) << d;
    }
  }
  // A clean open keeps the recovery point close() wrote (not replaced: same file).
  const std::string rp =
      (fs::exists(tmp.sub("d1/ta-3")) ? tmp.sub("d1/ta-3") : tmp.sub("d2/ta-3")) +
      "/recovery-point";
  auto inode = [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  };
  const auto rp_inode = inode(rp);
  ASSERT_NE(rp_inode, 0u);
  {
    auto m = open_with(4);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(inode(rp), rp_inode);
    EXPECT_EQ(*read_file_to_string(default_env(), rp), "4\n");
    for (int t = 0; t < kTopics; ++t) {
      for (int p = 0; p < kParts; ++p) {
        auto log = (*m)->partition(name(t), p);
        ASSERT_NE(log, nullptr);
        EXPECT_EQ(log->log_end_offset(), p % 5 + 1) << name(t) << "-" << p;
        append_n(*log, 1);
      }
    }
    // Not closed: the next open recovers every partition (no marker) and keeps the records.
  }
  {
    auto m = open_with(4);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    for (int p = 0; p < kParts; ++p) {
      EXPECT_EQ((*m)->partition("tb", p)->log_end_offset(), p % 5 + 2) << p;
    }
    // After the unclean open it was rewritten (to the active segment's base: recheck from 0).
    EXPECT_NE(inode(rp), rp_inode);
    EXPECT_EQ(*read_file_to_string(default_env(), rp), "0\n");
    ASSERT_TRUE((*m)->close_all().ok());
  }
  // One partition's segment cannot be opened (a directory where its file should be).
  const std::string bad = fs::exists(tmp.sub("d1/tc-7")) ? tmp.sub("d1/tc-7") : tmp.sub("d2/tc-7");
  fs::remove(bad + "/00000000000000000000.log");
  fs::create_directory(bad + "/00000000000000000000.log");
  for (int threads : {1, 4}) {
    auto m = open_with(threads);
    EXPECT_FALSE(m.ok()) << threads;
  }
}

TEST(LogManager, PlacesPartitionsOnTheEmptiestDirAndTagsThem) {
  TempDir tmp;
  auto m = open_mgr(default_env(), {tmp.sub("d1"), tmp.sub("d2")});
  ASSERT_TRUE(m->create_topic("a", 3, {}, id_of(1)).ok());
  ASSERT_TRUE(m->create_topic("b", 1, {}, id_of(2)).ok());
  EXPECT_TRUE(fs::is_directory(tmp.sub("d1/a-0")));
  EXPECT_TRUE(fs::is_directory(tmp.sub("d2/a-1")));
  EXPECT_TRUE(fs::is_directory(tmp.sub("d1/a-2")));
  EXPECT_TRUE(fs::is_directory(tmp.sub("d2/b-0")));
  const std::string expect = "version: 0\ntopic_id: " + protocol::Uuid{id_of(1)}.to_string() + "\n";
  EXPECT_EQ(*read_file_to_string(default_env(), tmp.sub("d2/a-1/partition.metadata")), expect);
  EXPECT_TRUE(fs::exists(tmp.sub("d1/a-0/00000000000000000000.log")));
}

TEST(LogManager, RejectsBadTopics) {
  TempDir tmp;
  auto m = open_mgr(default_env(), {tmp.sub("d1")});
  EXPECT_EQ(m->create_topic("bad name", 1, {}, id_of(1)).status().code(), Errc::invalid_argument);
  EXPECT_EQ(m->create_topic("..", 1, {}, id_of(1)).status().code(), Errc::invalid_argument);
  EXPECT_EQ(m->create_topic(std::string(250, 'x'), 1, {}, id_of(1)).status().code(),
            Errc::invalid_argument);
  EXPECT_EQ(m->create_topic("t", 0, {}, id_of(1)).status().code(), Errc::invalid_argument);
  EXPECT_EQ(m->create_topic("t", 1, {}, TopicId{}).status().code(), Errc::invalid_argument);
  ASSERT_TRUE(m->create_topic("t", 1, {}, id_of(1)).ok());
  EXPECT_EQ(m->create_topic("t", 1, {}, id_of(2)).status().code(), Errc::already_exists);
  EXPECT_EQ(m->create_topic("u", 1, {}, id_of(1)).status().code(), Errc::already_exists);
}

TEST(LogManager, DeleteRemovesMetadataAndFiles) {
  TempDir tmp;
  const std::vector<std::string> dirs = {tmp.sub("d1"), tmp.sub("d2")};
  std::shared_ptr<PartitionLog> handle;
  {
    auto m = open_mgr(default_env(), dirs);
    ASSERT_TRUE(m->create_topic("gone", 2, {}, id_of(7)).ok());
    ASSERT_TRUE(m->create_topic("kept", 1, {}, id_of(8)).ok());
    handle = m->partition("gone", 0);
    append_n(*handle, 3);
    ASSERT_TRUE(m->delete_topic("gone").ok());
    EXPECT_EQ(m->delete_topic("gone").code(), Errc::not_found);
    EXPECT_FALSE(m->find_topic("gone").has_value());
    EXPECT_FALSE(m->find_topic_by_id(id_of(7)).has_value());
    EXPECT_EQ(m->partition("gone", 0), nullptr);
    EXPECT_FALSE(fs::exists(tmp.sub("d1/gone-0")));
    EXPECT_FALSE(fs::exists(tmp.sub("d2/gone-1")));
    // An old handle stays safe to use; appends now fail.
    auto b = make_batch_n(1);
    EXPECT_EQ(handle->append(b, 0).status().code(), Errc::not_found);
    // The name can be reused with a new id, starting from an empty log.
    ASSERT_TRUE(m->create_topic("gone", 1, {}, id_of(9)).ok());
    EXPECT_EQ(m->partition("gone", 0)->log_end_offset(), 0);
    ASSERT_TRUE(m->close_all().ok());
  }
  auto m = open_mgr(default_env(), dirs);
  EXPECT_EQ(m->list_topics().size(), 2u);
  EXPECT_EQ(m->find_topic("gone")->topic_id, id_of(9));
}

TEST(LogManager, RemovesOrphanPartitionDirsOfDeletedTopics) {
  TempDir tmp;
  FaultInjectionEnv env;
  {
    auto m = open_mgr(&env, {tmp.sub("d1")});
    ASSERT_TRUE(m->create_topic("x", 2, {}, id_of(3)).ok());
    // Crash after the metadata was removed but before the files were.
    env.set_hook([](std::string_view op, const std::string&) {
      return op == "remove_dir" ? Status(Errc::io_error, "crash") : Status::Ok();
    });
    EXPECT_FALSE(m->delete_topic("x").ok());
    env.clear_faults();
  }
  EXPECT_TRUE(fs::exists(tmp.sub("d1/x-0")));
  auto m = open_mgr(&env, {tmp.sub("d1")});
  EXPECT_TRUE(m->list_topics().empty());
  EXPECT_FALSE(fs::exists(tmp.sub("d1/x-0")));
  EXPECT_FALSE(fs::exists(tmp.sub("d1/x-1")));
}

TEST(LogManager, MetaPropertiesChecksNodeId) {
  TempDir tmp;
  { auto m = open_mgr(default_env(), {tmp.sub("d1")}, 5); }
  auto text = read_file_to_string(default_env(), tmp.sub("d1/meta.properties"));
  ASSERT_TRUE(text.ok());
  auto meta = parse_meta_properties(*text);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->version, 1);
  EXPECT_EQ(meta->node_id, 5);
  EXPECT_EQ(meta->cluster_id.size(), 22u);
  auto wrong = LogManager::open(default_env(), {tmp.sub("d1")}, 6, nullptr);
  EXPECT_EQ(wrong.status().code(), Errc::invalid_argument);
  // A new second dir gets the same cluster id.
  auto m = open_mgr(default_env(), {tmp.sub("d1"), tmp.sub("d2")}, 5);
  auto second =
      parse_meta_properties(*read_file_to_string(default_env(), tmp.sub("d2/meta.properties")));
  EXPECT_EQ(second->cluster_id, meta->cluster_id);
}

TEST(LogManager, ConfigForIsApplied) {
  TempDir tmp;
  auto m = LogManager::open(default_env(), {tmp.sub("d1")}, 1, [](const TopicMeta& t) {
    LogConfig c;
    if (t.configs.contains("segment.bytes"))
      c.segment_bytes = std::stoll(t.configs.at("segment.bytes"));
    return c;
  });
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->create_topic("small", 1, {{"segment.bytes", "300"}}, id_of(4)).ok());
  auto log = (*m)->partition("small", 0);
  for (int i = 0; i < 10; ++i) append_n(*log, 2);
  EXPECT_GT(log->segment_base_offsets().size(), 3u);
}

}  // namespace
}  // namespace strata::storage
