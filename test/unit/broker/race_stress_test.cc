// Races under the sanitizers: an in-process broker serves producers, fetchers and PK-table readers
// (Lookup, PrefixLookup, Scan, ReadChangelog) while an admin thread deletes and recreates the
// topics they use, adds partitions and alters configs, and the broker's own retention, cleaner and
// checkpoint threads run every few milliseconds. Run in the ASan+UBSan build of the suite (and
// TSan when built with it), this is where a use-after-free or data race between a request and
// DeleteTopics shows. Asserted: every client kept being served (each one succeeded many times),
// the broker answers a fresh topic at the end, and it shuts down cleanly.
// STRATA_STRESS_SECONDS sets the duration (default 8).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "broker/broker.h"
#include "broker/config/config.h"
#include "tools/client/client.h"

namespace strata::broker {
namespace {

using namespace std::chrono_literals;

// (Not "k" + to_string: GCC 12's -Wrestrict false positive at -O3.)
std::string key_of(int64_t i) {
  std::string k("k");
  k.append(std::to_string(i));
  return k;
}

std::map<std::string, std::string> pk_table_configs() {
  return {{"table.type", "primary-key"}, {"segment.bytes", "16384"}, {"retention.ms", "2000"}};
}

TEST(RaceStress, RequestsAgainstDeleteRecreateAlterRetentionCompaction) {
  const char* env_seconds = std::getenv("STRATA_STRESS_SECONDS");
  const int seconds = env_seconds ? std::atoi(env_seconds) : 8;
  char tmpl[] = "/tmp/strata-stress-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  auto config = parse_config(
      "listeners=PLAINTEXT://127.0.0.1:0\n"
      "metrics.listener=\n"
      "schema.registry.listener=\n"
      "log.dirs=" +
          dir +
          "\n"
          "num.io.threads=4\n"
          "log.retention.check.interval.ms=50\n"
          "log.cleaner.backoff.ms=50\n"
          "log.flush.scheduler.interval.ms=20\n"
          "auto.create.topics.enable=false\n"
          "log.segment.bytes.min=1024\n",  // small segments: retention and compaction work
      {});
  ASSERT_TRUE(config.ok()) << config.status().to_string();
  Broker broker(*config);
  ASSERT_TRUE(broker.start().ok());
  std::thread serving([&] { broker.run(); });
  const std::string bootstrap =
      "127.0.0.1:" + std::to_string(broker.bound_listeners().front().port);

  auto client = [&] {
    client::ClientOptions o;
    o.bootstrap = bootstrap;
    return std::make_unique<client::Client>(o);
  };
  {
    auto admin = client();
    ASSERT_TRUE(admin->connect().ok());
    ASSERT_TRUE(
        admin->create_topic({"logs", 4, 1, {{"segment.bytes", "16384"}, {"retention.ms", "2000"}}})
            .ok());
    ASSERT_TRUE(admin->create_topic({"pk", 2, 1, pk_table_configs()}).ok());
  }

  std::atomic<bool> stop{false};
  std::atomic<int64_t> produced{0}, fetched{0}, read{0}, admin_ops{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {  // producer: log topic and PK table
    auto c = client();
    int64_t i = 0;
    while (!stop) {
      if (!c->connect().ok()) continue;
      std::vector<client::ProduceRecord> batch;
      for (int k = 0; k < 20; ++k, ++i) {
        client::ProduceRecord r;
        r.key = key_of(i % 300);
        if (i % 7 == 0) {
          r.value = std::nullopt;  // PK delete / tombstone
        } else {
          r.value = std::string(64, static_cast<char>('a' + i % 26));
        }
        batch.push_back(std::move(r));
      }
      for (const char* topic : {"logs", "pk"}) {
        if (c->produce(topic, batch).ok()) ++produced;
      }
    }
  });
  threads.emplace_back([&] {  // fetcher
    auto c = client();
    while (!stop) {
      if (!c->connect().ok()) continue;
      auto r = c->fetch_partitions("logs", {{0, 0}, {1, 0}, {2, 0}, {3, 0}}, 20, 1 << 16);
      if (r.ok()) ++fetched;
    }
  });
  threads.emplace_back([&] {  // PK-table reader: every read API
    auto c = client();
    int64_t i = 0;
    while (!stop) {
      if (!c->connect().ok()) continue;
      auto table = c->describe_table("pk");
      if (!table.ok()) continue;
      std::vector<std::string> keys = {"k1", "k2", key_of(i++ % 300)};
      bool ok = c->lookup(*table, keys).ok();
      ok = c->prefix_lookup(*table, "k1", 50, 20).ok() && ok;
      ok = c->scan(*table, 200, 50).ok() && ok;
      ok = c->read_changelog(*table, {{0, 0}, {1, 0}}, 100, 0).ok() && ok;
      if (ok) ++read;
    }
  });
  threads.emplace_back([&] {  // admin: delete and recreate, grow, alter
    auto c = client();
    int round = 0;
    while (!stop) {
      std::this_thread::sleep_for(150ms);
      if (!c->connect().ok()) continue;
      switch (round++ % 4) {
        case 0:
          (void)c->delete_topic("pk");
          (void)c->create_topic({"pk", 2, 1, pk_table_configs()});
          break;
        case 1:
          (void)c->create_partitions("logs", 4 + round / 4 % 3 + 1);
          break;
        case 2:
          (void)c->alter_configs(
              client::ResourceType::topic, "logs",
              {{"cleanup.policy", client::ConfigOp::set, round % 8 < 4 ? "compact" : "delete"},
               {"segment.bytes", client::ConfigOp::set, "16384"},
               {"retention.ms", client::ConfigOp::set, "2000"}});
          break;
        default:
          (void)c->delete_topic("logs");
          (void)c->create_topic({"logs", 4, 1, {{"segment.bytes", "16384"}}});
          break;
      }
      ++admin_ops;
    }
  });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  // Under a loaded disk (other tests fsyncing) one RocksDB checkpoint or partition creation can
  // take seconds, and the admin requests wait for them: the race window is what matters, so the
  // clients run on until the admin has had its rounds too (bounded).
  const auto admin_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (admin_ops.load() <= 8 && std::chrono::steady_clock::now() < admin_deadline) {
    std::this_thread::sleep_for(50ms);
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(produced.load(), 20) << "producers were served throughout";
  EXPECT_GT(fetched.load(), 20);
  EXPECT_GT(read.load(), 5);
  EXPECT_GT(admin_ops.load(), 8);

  // Still serving: a fresh topic takes a record and gives it back.
  auto c = client();
  ASSERT_TRUE(c->connect().ok());
  ASSERT_TRUE(c->create_topic({"after", 1, 1, {}}).ok());
  client::ProduceRecord r;
  r.key = "x";
  r.value = "y";
  ASSERT_TRUE(c->produce("after", std::span<const client::ProduceRecord>(&r, 1)).ok());
  auto f = c->fetch("after", 0, 0);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->records.size(), 1u);
  c.reset();
  broker.shutdown();
  serving.join();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace strata::broker
