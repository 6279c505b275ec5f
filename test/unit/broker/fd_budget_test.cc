// The descriptor budget of CreateTopics / CreatePartitions: the per-partition estimate, the budget
// under a limit and reserve, and TopicRegistry refusing growth past it (Errc::too_large, which
// the handlers answer as POLICY_VIOLATION) while creations that fit succeed.
#include "broker/topics/fd_budget.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include "broker/topics/topic_registry.h"
#include "storage/log_manager.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker {
namespace {

TEST(FdBudget, PartitionEstimate) {
  EXPECT_EQ(partition_fd_estimate(1, false, 64), 4);  // active .log reader + writer + 2 indexes
  EXPECT_EQ(partition_fd_estimate(0, false, 64), 4);  // at least the active segment
  EXPECT_EQ(partition_fd_estimate(5, false, 64), 8);  // each sealed segment keeps its .log
  EXPECT_EQ(partition_fd_estimate(1, true, 64), 4 + 64 + kPkFixedFds);
  EXPECT_EQ(partition_fd_estimate(3, true, 10), 6 + 10 + kPkFixedFds);
}

TEST(FdBudget, BudgetIsTheLimitLessTheReserveAtMostHalf) {
  EXPECT_EQ(partition_fd_budget(20000, 1024), 20000 - 1024);
  EXPECT_EQ(partition_fd_budget(1024, 1024), 512);  // the reserve is at most half the limit
  EXPECT_EQ(partition_fd_budget(1000, 0), 1000);
  EXPECT_EQ(partition_fd_budget(INT64_MAX, 1024), INT64_MAX);  // unlimited
  EXPECT_GE(partition_fd_budget(0, 5), 0);
}

TEST(FdBudget, CheckRefusesOnlyPastTheBudget) {
  EXPECT_TRUE(check_fd_budget(900, 100, 2000, 1000).ok());  // exactly the budget
  auto st = check_fd_budget(900, 101, 2000, 1000);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Errc::too_large);
  EXPECT_NE(st.message().find("1001"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("open.files.reserved"), std::string::npos) << st.message();
  EXPECT_TRUE(check_fd_budget(1 << 30, 1 << 30, INT64_MAX, 1024).ok());
}

// Lowers this process's soft RLIMIT_NOFILE for the scope of a test.
class SoftLimit {
 public:
  explicit SoftLimit(rlim_t soft) {
    EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &old_), 0);
    rlimit low = old_;
    low.rlim_cur = std::min(soft, old_.rlim_max);
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  }
  ~SoftLimit() { ::setrlimit(RLIMIT_NOFILE, &old_); }

 private:
  rlimit old_{};
};

TEST(FdBudget, RegistryEstimatesAndRefusesGrowthPastTheBudget) {
  storage::testing::TempDir dir;
  auto logs =
      storage::LogManager::open(storage::default_env(), {dir.sub("d")}, 1,
                                [](const storage::TopicMeta&) { return storage::LogConfig{}; });
  ASSERT_TRUE(logs.ok()) << logs.status().to_string();
  auto config = parse_config("", {"open.files.reserved=100000"});  // clamped to half the limit
  ASSERT_TRUE(config.ok());
  TopicRegistry topics(**logs, *config);
  ASSERT_TRUE(topics.load().ok());
  topics.set_pk_open_files_per_partition(10);
  EXPECT_EQ(topics.fd_estimate(), 0);
  {
    SoftLimit limit(400);  // budget: 400 - 200
    if (open_files_limit() != 400) GTEST_SKIP() << "hard RLIMIT_NOFILE below 400";
    ASSERT_TRUE(topics.create("a", 30, {}, false).ok());  // 120
    EXPECT_EQ(topics.fd_estimate(), 120);
    auto pk = topics.create("pk", 2, {{"table.type", "primary-key"}}, false);  // 2 x 22
    ASSERT_TRUE(pk.ok()) << pk.status().to_string();
    EXPECT_EQ(topics.fd_estimate(), 164);
    // 9 more log partitions (36) would need 200: fits; 10 (40) would not.
    auto big = topics.create("b", 10, {}, false);
    ASSERT_FALSE(big.ok());
    EXPECT_EQ(big.status().code(), Errc::too_large);
    EXPECT_FALSE(topics.find("b"));
    EXPECT_EQ(topics.add_partitions("a", 40, false).status().code(), Errc::too_large);
    EXPECT_EQ(topics.find("a")->partitions.size(), 30u);
    ASSERT_TRUE(topics.create("b", 9, {}, false).ok());
    EXPECT_EQ(topics.fd_estimate(), 200);
    EXPECT_EQ(topics.add_partitions("b", 10, false).status().code(), Errc::too_large);
    ASSERT_TRUE(topics.remove("pk").ok());  // frees its share
    EXPECT_TRUE(topics.add_partitions("b", 20, false).ok());
  }
  ASSERT_TRUE((*logs)->close_all().ok());
}

}  // namespace
}  // namespace strata::broker
