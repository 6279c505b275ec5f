// Issue 4 (admin half), storage side: DeleteRecords' durable log start offset and the retention
// bound; LogManager growing a topic and updating its configs durably; dynamic LogConfig.
#include <gtest/gtest.h>

#include <limits>

#include "storage/file_names.h"
#include "storage/log_manager.h"
#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::make_batch_n;
using testing::TempDir;

std::unique_ptr<PartitionLog> open_log(const std::string& dir, LogConfig c = {}) {
  auto log = PartitionLog::open(default_env(), dir, c, 1000);
  EXPECT_TRUE(log.ok()) << log.status().to_string();
  return log.ok() ? std::move(*log) : nullptr;
}

void append(PartitionLog& log, int records) {
  auto b = make_batch_n(records);
  ASSERT_TRUE(log.append(b, 1000).ok());
}

TEST(DeleteRecords, MovesLogStartDurably) {
  TempDir dir;
  {
    auto log = open_log(dir.sub("t-0"));
    append(*log, 5);
    append(*log, 5);
    auto r = log->delete_records_before(7);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(*r, 7);
    EXPECT_EQ(log->log_start_offset(), 7);
    auto below = log->read(6, 1 << 20, true, log->high_watermark());
    ASSERT_FALSE(below.ok());
    EXPECT_EQ(below.status().code(), Errc::out_of_range);
    EXPECT_TRUE(log->read(7, 1 << 20, true, log->high_watermark()).ok());
    // Never backwards.
    EXPECT_EQ(*log->delete_records_before(3), 7);
    ASSERT_TRUE(log->close().ok());
  }
  auto log = open_log(dir.sub("t-0"));
  EXPECT_EQ(log->log_start_offset(), 7);
  EXPECT_EQ(log->log_end_offset(), 10);
}

TEST(DeleteRecords, SurvivesACrash) {
  TempDir dir;
  {
    auto log = open_log(dir.sub("t-0"));
    append(*log, 4);
    ASSERT_TRUE(log->delete_records_before(4).ok());
    ASSERT_TRUE(log->flush().ok());
    // dropped without close(): a crash
  }
  auto log = open_log(dir.sub("t-0"));
  EXPECT_EQ(log->log_start_offset(), 4);
  EXPECT_EQ(log->log_end_offset(), 4);
}

TEST(DeleteRecords, BeyondHighWatermarkChangesNothing) {
  TempDir dir;
  auto log = open_log(dir.sub("t-0"));
  append(*log, 3);
  for (int64_t bad : {int64_t{4}, int64_t{-5}}) {
    auto r = log->delete_records_before(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Errc::out_of_range);
  }
  EXPECT_EQ(log->log_start_offset(), 0);
  EXPECT_FALSE(default_env()->file_exists(dir.sub("t-0") + "/" + std::string(kLogStartOffsetFile)));
  EXPECT_EQ(*log->delete_records_before(3), 3);  // == high watermark is allowed
}

TEST(DeleteRecords, ClampedByTheOwnersRetentionBound) {
  TempDir dir;
  auto log = open_log(dir.sub("t-0"));
  append(*log, 10);
  EXPECT_EQ(log->retention_bound(), std::numeric_limits<int64_t>::max());
  int64_t bound = 4;
  log->set_retention_bound([&bound] { return bound; });
  EXPECT_EQ(*log->delete_records_before(8), 4);
  bound = 6;
  EXPECT_EQ(*log->delete_records_before(8), 6);
}

TEST(DynamicLogConfig, SetConfigRollsAtTheNewSize) {
  TempDir dir;
  auto log = open_log(dir.sub("t-0"));
  append(*log, 2);
  append(*log, 2);
  EXPECT_EQ(log->segment_base_offsets().size(), 1u);
  LogConfig c = log->config();
  c.segment_bytes = 100;  // smaller than one batch: every append rolls
  log->set_config(c);
  EXPECT_EQ(log->config().segment_bytes, 100);
  append(*log, 2);
  append(*log, 2);
  EXPECT_GE(log->segment_base_offsets().size(), 2u);
}

TEST(LogManagerAdmin, AddPartitionsAndUpdateConfigsAreDurable) {
  TempDir dir;
  auto env = default_env();
  TopicId id{};
  id[0] = 7;
  int configured = 0;
  auto config_for = [&configured](const TopicMeta& meta) {
    ++configured;
    LogConfig c;
    auto it = meta.configs.find("segment.bytes");
    if (it != meta.configs.end()) c.segment_bytes = std::stoll(it->second);
    return c;
  };
  {
    auto mgr = LogManager::open(env, {dir.sub("a"), dir.sub("b")}, 1, config_for);
    ASSERT_TRUE(mgr.ok()) << mgr.status().to_string();
    ASSERT_TRUE((*mgr)->create_topic("t", 2, {}, id).ok());
    auto bad = (*mgr)->add_partitions("t", 2);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.status().code(), Errc::invalid_argument);
    EXPECT_EQ((*mgr)->add_partitions("nope", 3).status().code(), Errc::not_found);
    auto grown = (*mgr)->add_partitions("t", 5);
    ASSERT_TRUE(grown.ok()) << grown.status().to_string();
    EXPECT_EQ(grown->partitions, 5);
    ASSERT_NE((*mgr)->partition("t", 4), nullptr);
    auto b = make_batch_n(1);
    ASSERT_TRUE((*mgr)->partition("t", 4)->append(b, 1000).ok());
    auto upd = (*mgr)->update_topic_configs("t", {{"segment.bytes", "4096"}});
    ASSERT_TRUE(upd.ok());
    EXPECT_EQ((*mgr)->partition("t", 0)->config().segment_bytes, 4096);
    EXPECT_EQ((*mgr)->partition("t", 4)->config().segment_bytes, 4096);
    ASSERT_TRUE((*mgr)->close_all().ok());
  }
  auto mgr = LogManager::open(env, {dir.sub("a"), dir.sub("b")}, 1, config_for);
  ASSERT_TRUE(mgr.ok());
  auto t = (*mgr)->find_topic("t");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->partitions, 5);
  EXPECT_EQ(t->configs.at("segment.bytes"), "4096");
  ASSERT_NE((*mgr)->partition("t", 4), nullptr);
  EXPECT_EQ((*mgr)->partition("t", 4)->log_end_offset(), 1);
  EXPECT_EQ((*mgr)->partition("t", 1)->config().segment_bytes, 4096);
}

}  // namespace
}  // namespace strata::storage
