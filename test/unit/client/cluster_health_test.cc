// Unit tests of `strata cluster describe`'s health computation and rendering
// (tools/cli/cluster_health.h) over a synthetic Metadata answer: a healthy partition, an
// under-replicated one, an offline one (whose ISR is also short) and a topic with an error.
#include "tools/cli/cluster_health.h"

#include <gtest/gtest.h>

#include <iterator>
#include <sstream>

namespace strata::cli {
namespace {

client::PartitionInfo part(int32_t id, int32_t leader, int32_t epoch, std::vector<int32_t> replicas,
                           std::vector<int32_t> isr, std::vector<int32_t> offline = {}) {
  client::PartitionInfo p;
  p.partition = id;
  p.leader = leader;
  p.leader_epoch = epoch;
  p.replicas = std::move(replicas);
  p.isr = std::move(isr);
  p.offline_replicas = std::move(offline);
  return p;
}

client::ClusterMetadata three_brokers() {
  client::ClusterMetadata c;
  c.cluster_id = "cl-1";
  c.controller_id = 2;
  c.brokers = {{1, "10.0.0.1", 9092, std::string("r1")},
               {2, "10.0.0.2", 9093, std::nullopt},
               {3, "::1", 9094, std::nullopt}};
  return c;
}

client::ClusterMetadata sick_metadata() {
  client::ClusterMetadata md = three_brokers();
  client::TopicInfo a;
  a.name = "alpha";
  a.partitions = {part(0, 1, 4, {1, 2, 3}, {1, 2, 3}),     // healthy
                  part(1, 2, 7, {2, 3, 1}, {2, 1}, {3})};  // under-replicated
  client::TopicInfo b;
  b.name = "beta";
  b.partitions = {part(0, -1, 9, {3, 1}, {3}, {3})};  // offline (and ISR short)
  client::TopicInfo e;
  e.name = "gamma";
  e.error_code = 5;  // LEADER_NOT_AVAILABLE, no partitions
  md.topics = {a, b, e};
  return md;
}

TEST(ClusterHealth, CountsUnderReplicatedAndOfflineIndependently) {
  const ClusterHealth h = compute_health(sick_metadata());
  EXPECT_EQ(h.topics, 3);
  EXPECT_EQ(h.partitions, 3);
  EXPECT_EQ(h.under_replicated, 2);  // alpha-1 and beta-0
  EXPECT_EQ(h.offline, 1);           // beta-0
  ASSERT_EQ(h.unhealthy.size(), 2u);
  EXPECT_EQ(h.unhealthy[0].topic, "alpha");
  EXPECT_EQ(h.unhealthy[0].info.partition, 1);
  EXPECT_TRUE(h.unhealthy[0].under_replicated);
  EXPECT_FALSE(h.unhealthy[0].offline);
  EXPECT_EQ(h.unhealthy[1].topic, "beta");
  EXPECT_TRUE(h.unhealthy[1].offline);
  EXPECT_TRUE(h.unhealthy[1].under_replicated);
  ASSERT_EQ(h.topic_errors.size(), 1u);
  EXPECT_EQ(h.topic_errors[0].topic, "gamma");
  EXPECT_EQ(h.topic_errors[0].error, "LEADER_NOT_AVAILABLE");
}

TEST(ClusterHealth, HealthyClusterHasNothingToList) {
  client::ClusterMetadata md = three_brokers();
  client::TopicInfo t;
  t.name = "t";
  t.partitions = {part(0, 1, 0, {1}, {1}), part(1, 1, 0, {1}, {1})};
  md.topics = {t};
  const ClusterHealth h = compute_health(md);
  EXPECT_EQ(h.partitions, 2);
  EXPECT_EQ(h.under_replicated, 0);
  EXPECT_EQ(h.offline, 0);
  EXPECT_TRUE(h.unhealthy.empty());

  std::ostringstream quiet;
  print_cluster_text(quiet, three_brokers(), h, false);
  EXPECT_NE(quiet.str().find("2 in 1 topic, 0 under-replicated, 0 offline"), std::string::npos)
      << quiet.str();
  EXPECT_EQ(quiet.str().find("TOPIC"), std::string::npos) << quiet.str();  // no table
  std::ostringstream forced;
  print_cluster_text(forced, three_brokers(), h, true);
  EXPECT_NE(forced.str().find("no under-replicated or offline partitions"), std::string::npos)
      << forced.str();
}

TEST(ClusterHealth, TextListsBrokersAndEveryUnhealthyPartition) {
  const ClusterHealth h = compute_health(sick_metadata());
  std::ostringstream os;
  print_cluster_text(os, three_brokers(), h, false);  // the table shows without --partitions
  const std::string out = os.str();
  EXPECT_NE(out.find("cluster cl-1  controller 2"), std::string::npos) << out;
  EXPECT_NE(out.find("10.0.0.1:9092  r1"), std::string::npos) << out;
  EXPECT_NE(out.find("10.0.0.2:9093"), std::string::npos) << out;
  EXPECT_NE(out.find("[::1]:9094"), std::string::npos) << out;
  EXPECT_NE(out.find("3 in 3 topics, 2 under-replicated, 1 offline"), std::string::npos) << out;
  EXPECT_NE(out.find("topic gamma: LEADER_NOT_AVAILABLE"), std::string::npos) << out;
  std::istringstream lines(out);
  std::vector<std::string> rows;
  for (std::string l; std::getline(lines, l);) {
    if (l.rfind("alpha ", 0) == 0 || l.rfind("beta ", 0) == 0) rows.push_back(l);
  }
  ASSERT_EQ(rows.size(), 2u) << out;
  // alpha-1: leader 2, epoch 7, replicas 2,3,1, ISR 2,1, offline replica 3.
  std::istringstream r0(rows[0]);
  std::vector<std::string> f0{std::istream_iterator<std::string>(r0), {}};
  EXPECT_EQ(f0, (std::vector<std::string>{"alpha", "1", "2", "7", "2,3,1", "2,1", "3",
                                          "under-replicated"}));
  std::istringstream r1(rows[1]);
  std::vector<std::string> f1{std::istream_iterator<std::string>(r1), {}};
  EXPECT_EQ(f1, (std::vector<std::string>{"beta", "0", "-1", "9", "3,1", "3", "3",
                                          "offline,under-replicated"}));
}

TEST(ClusterHealth, JsonCarriesCountsAndPartitions) {
  const json j = cluster_json(three_brokers(), compute_health(sick_metadata()));
  EXPECT_EQ(j["cluster_id"], "cl-1");
  EXPECT_EQ(j["controller_id"], 2);
  ASSERT_EQ(j["brokers"].size(), 3u);
  EXPECT_EQ(j["brokers"][0]["rack"], "r1");
  EXPECT_TRUE(j["brokers"][1]["rack"].is_null());
  EXPECT_EQ(j["health"]["partitions"], 3);
  EXPECT_EQ(j["health"]["under_replicated"], 2);
  EXPECT_EQ(j["health"]["offline"], 1);
  ASSERT_EQ(j["unhealthy_partitions"].size(), 2u);
  const json& b = j["unhealthy_partitions"][1];
  EXPECT_EQ(b["topic"], "beta");
  EXPECT_EQ(b["leader"], -1);
  EXPECT_EQ(b["leader_epoch"], 9);
  EXPECT_EQ(b["replicas"], json::array({3, 1}));
  EXPECT_EQ(b["isr"], json::array({3}));
  EXPECT_EQ(b["offline_replicas"], json::array({3}));
  EXPECT_EQ(b["offline"], true);
  EXPECT_EQ(j["topic_errors"][0]["error"], "LEADER_NOT_AVAILABLE");
}

}  // namespace
}  // namespace strata::cli
