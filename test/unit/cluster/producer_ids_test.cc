// Producer ids stay unique: across restarts of one broker (the file), and across brokers racing
// for blocks in etcd (compare-and-swap on one counter).
#include "broker/txn/producer_ids.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <thread>

#include "broker/cluster/producer_id_blocks.h"
#include "storage/env.h"
#include "test/unit/cluster/fake_coordination.h"

namespace strata::broker {
namespace {

TEST(ProducerIds, FileBlocksContinueAfterReopen) {
  const auto dir = std::filesystem::temp_directory_path() / "strata-pid-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::set<int64_t> seen;
  for (int run = 0; run < 3; ++run) {
    auto m = ProducerIdManager::open(storage::default_env(), dir.string(), 10);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    for (int i = 0; i < 15; ++i) {
      auto id = (*m)->next();
      ASSERT_TRUE(id.ok());
      EXPECT_TRUE(seen.insert(*id).second) << "id " << *id << " handed out twice";
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(ProducerIds, EtcdBlocksAreUniqueAcrossRacingBrokers) {
  cluster::FakeCoordination etcd;
  const cluster::Layout layout("/strata/t");
  constexpr int kBrokers = 4, kIds = 500;
  std::vector<std::vector<int64_t>> got(kBrokers);
  std::vector<std::thread> threads;
  for (int b = 0; b < kBrokers; ++b) {
    threads.emplace_back([&, b] {
      ProducerIdManager m(std::make_unique<cluster::EtcdProducerIdBlocks>(etcd, layout), 7);
      for (int i = 0; i < kIds; ++i) {
        auto id = m.next();
        ASSERT_TRUE(id.ok()) << id.status().to_string();
        got[b].push_back(*id);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<int64_t> all;
  for (const auto& ids : got) all.insert(ids.begin(), ids.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(kBrokers * kIds));
  // A new broker (or a restarted one) continues after every reserved block.
  ProducerIdManager late(std::make_unique<cluster::EtcdProducerIdBlocks>(etcd, layout), 7);
  EXPECT_GT(*late.next(), *all.rbegin());
  // etcd unreachable: the reservation fails instead of guessing.
  ProducerIdManager cut(std::make_unique<cluster::EtcdProducerIdBlocks>(etcd, layout), 7);
  etcd.set_unreachable(true);
  EXPECT_EQ(cut.next().status().code(), Errc::io_error);
}

}  // namespace
}  // namespace strata::broker
