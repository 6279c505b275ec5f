// PkTables::drop is final: requests racing a DeleteTopics of a primary-key table (writers and
// readers on other threads, as connections would be) either used the state before the drop or get
// not_found after it — a state is never reopened over the logs being removed (that reopened state
// referenced a freed PartitionLog: use-after-free at its next memtable flush under ASan), and no
// kv/ directory comes back.
#include "broker/pk/pk_tables.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "protocol/record/batch_builder.h"
#include "storage/env.h"
#include "storage/log_manager.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker {
namespace {

// prefix + number without operator+ (GCC 12 -Wrestrict false positive at -O3).
std::string name_of(const char* prefix, int n) {
  std::string s(prefix);
  s.append(std::to_string(n));
  return s;
}

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(PkTables, DropIsFinalWhileRequestsRace) {
  storage::testing::TempDir dir;
  auto logs = storage::LogManager::open(storage::default_env(), {dir.sub("d")}, 1, nullptr);
  ASSERT_TRUE(logs.ok()) << logs.status().to_string();
  BrokerConfig config;
  TopicRegistry topics(**logs, config);
  ASSERT_TRUE(topics.load().ok());
  constexpr int kParts = 2;
  for (int round = 0; round < 5; ++round) {
    const std::string name = name_of("pk-", round);
    auto created = topics.create(name, kParts, {{"table.type", "primary-key"}}, false);
    ASSERT_TRUE(created.ok()) << created.status().to_string();
    std::shared_ptr<const TopicEntry> entry = *created;
    PkTables tables(topics);
    std::atomic<bool> dropped{false};
    std::atomic<int> reopened_after_drop{0};
    std::atomic<int> writes{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 400; ++i) {
          const bool after = dropped.load();
          auto state = tables.get(*entry, (t + i) % kParts);
          if (!state.ok()) {
            EXPECT_EQ(state.status().code(), Errc::not_found) << state.status().to_string();
            continue;
          }
          if (after) ++reopened_after_drop;
          // A write through the state: before the drop it lands, during/after it fails cleanly.
          protocol::RecordBatchBuilder bb;
          const std::string key = name_of("k", i);
          bb.add(1, b(key), b(key), {});
          auto input = bb.build();
          storage::PartitionLog* log = entry->partition((t + i) % kParts);
          pkindex::WriteInput in{protocol::RecordBatchView(input)};
          // Keys are routed to any partition here: misrouted ones are rejected, which is fine.
          auto w =
              (*state)->write(in, 1, [&](std::span<uint8_t> out) { return log->append(out, 1); });
          if (w.status.ok()) ++writes;
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    tables.drop(*entry);
    dropped = true;  // every get() that starts from here must fail
    auto after = tables.get(*entry, 0);
    ASSERT_FALSE(after.ok());
    EXPECT_EQ(after.status().code(), Errc::not_found);
    EXPECT_EQ(tables.find_open(*entry, 0), nullptr);
    ASSERT_TRUE(topics.remove(name).ok());
    for (auto& th : threads) th.join();
    EXPECT_EQ(reopened_after_drop.load(), 0);
    for (int p = 0; p < kParts; ++p) {
      EXPECT_FALSE(tables.get(*entry, p).ok());
      std::string part = dir.sub("d");
      part.append("/").append(name).append("-").append(std::to_string(p));
      EXPECT_FALSE(std::filesystem::exists(part));
    }
    EXPECT_TRUE(tables.close_all().ok());
  }
}

}  // namespace
}  // namespace strata::broker
