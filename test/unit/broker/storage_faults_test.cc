// A full disk seen from a client: a broker running on FaultInjectionEnv answers Produce with
// KAFKA_STORAGE_ERROR (56) while every write fails with ENOSPC (short writes included), keeps
// serving Fetch and Lookup, and accepts Produce again, at the next offset, as soon as writes work
// again — for a log topic and for a primary-key table (docs/storage.md, "Fault classes").
#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker.h"
#include "protocol/wire/errors.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"
#include "tools/client/client.h"

namespace strata::broker {
namespace {

using storage::testing::Fault;
using storage::testing::FaultInjectionEnv;
using storage::testing::FaultOp;
using storage::testing::TempDir;

class RunningBroker {
 public:
  RunningBroker(const std::string& dir, storage::Env* env) {
    // Small segments (segment.bytes=1024) need a lower floor.
    auto config = parse_config(
        "", {"listeners=PLAINTEXT://127.0.0.1:0", "log.dirs=" + dir, "num.io.threads=1",
             "metrics.listener=", "schema.registry.listener=", "group.initial.rebalance.delay.ms=0",
             "log.segment.bytes.min=1024"});
    EXPECT_TRUE(config.ok()) << config.status().to_string();
    broker_ = std::make_unique<Broker>(*config, env);
    Status st = broker_->start();
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return;
    thread_ = std::thread([this] { broker_->run(); });
  }
  ~RunningBroker() {
    broker_->shutdown();
    if (thread_.joinable()) thread_.join();
  }
  std::string bootstrap() const {
    return "127.0.0.1:" + std::to_string(broker_->bound_listeners().front().port);
  }

 private:
  std::unique_ptr<Broker> broker_;
  std::thread thread_;
};

std::vector<client::ProduceRecord> records(const std::string& prefix, int n) {
  std::vector<client::ProduceRecord> out;
  for (int i = 0; i < n; ++i) {
    client::ProduceRecord r;
    r.partition = 0;
    r.key = prefix + std::to_string(i);
    r.value = "value-" + prefix + std::to_string(i);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<int64_t> fetched_offsets(client::Client& c, const std::string& topic) {
  std::vector<int64_t> out;
  auto f = c.fetch(topic, 0, 0, /*max_wait_ms=*/0);
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return out;
  for (const auto& r : f->records) out.push_back(r.offset);
  return out;
}

TEST(StorageFaults, ProduceGetsStorageErrorWhileTheDiskIsFullFetchWorksAndWritesResume) {
  static_assert(static_cast<int16_t>(protocol::ErrorCode::kafka_storage_error) == 56);
  TempDir tmp;
  FaultInjectionEnv env;
  RunningBroker broker(tmp.sub("data"), &env);
  client::ClientOptions opts;
  opts.bootstrap = broker.bootstrap();
  client::Client c(opts);
  ASSERT_TRUE(c.create_topic({"logs", 1, 1, {{"segment.bytes", "1024"}}}).ok());
  ASSERT_TRUE(c.create_topic({"table", 1, 1, {{"table.type", "primary-key"}}}).ok());

  auto first = records("a", 3);
  auto p1 = c.produce("logs", first);
  ASSERT_TRUE(p1.ok()) << p1.status().to_string();
  auto t1 = records("k", 2);
  ASSERT_TRUE(c.produce("table", t1).ok());
  EXPECT_EQ(fetched_offsets(c, "logs"), (std::vector<int64_t>{0, 1, 2}));

  // The disk is full: every write fails, after landing a few bytes.
  env.inject(FaultOp::write, Fault{ENOSPC, -1, "", 9});
  for (int i = 0; i < 8; ++i) {  // large enough batches that a roll comes due and fails too
    auto more = records("full" + std::string(200 * static_cast<size_t>(i + 1), 'x'), 2);
    auto p = c.produce("logs", more);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(client::error_name_of(p.status()), "KAFKA_STORAGE_ERROR") << p.status().to_string();
  }
  auto t2 = records("k", 1);
  auto pt = c.produce("table", t2);
  ASSERT_FALSE(pt.ok());
  EXPECT_EQ(client::error_name_of(pt.status()), "KAFKA_STORAGE_ERROR") << pt.status().to_string();
  EXPECT_GT(env.injected_count(), 8);
  // Reads are served meanwhile: Fetch, and Lookup of the table.
  EXPECT_EQ(fetched_offsets(c, "logs"), (std::vector<int64_t>{0, 1, 2}));
  auto table = c.describe_table("table");
  ASSERT_TRUE(table.ok()) << table.status().to_string();
  const std::vector<std::string> keys = {"k0", "k1"};
  auto rows = c.lookup(*table, keys);
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_TRUE((*rows)[0].found);
  EXPECT_EQ((*rows)[0].value, "value-k0");

  // Space is back: the next Produce succeeds at the next offset, with nothing torn in between.
  env.clear_faults();
  auto last = records("b", 2);
  auto p2 = c.produce("logs", last);
  ASSERT_TRUE(p2.ok()) << p2.status().to_string();
  EXPECT_EQ(p2->placements.front().second, 3);
  EXPECT_EQ(fetched_offsets(c, "logs"), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  auto t3 = records("new", 1);
  auto pt3 = c.produce("table", t3);
  ASSERT_TRUE(pt3.ok()) << pt3.status().to_string();
  EXPECT_EQ(pt3->placements.front().second, 2);
  const std::vector<std::string> new_key = {"new0"};
  auto row = c.lookup(*table, new_key);
  ASSERT_TRUE(row.ok()) << row.status().to_string();
  ASSERT_EQ(row->size(), 1u);
  EXPECT_EQ(row->front().value, "value-new0");
}

}  // namespace
}  // namespace strata::broker
