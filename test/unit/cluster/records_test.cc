// Cluster records in etcd: keys under the prefix parse back to what they name, values round-trip,
// unknown fields are ignored and wrong types are corruption, never a crash.
#include "broker/cluster/records.h"

#include <gtest/gtest.h>

namespace strata::broker::cluster {
namespace {

TEST(Records, LayoutKeysParseBack) {
  Layout l("/strata/c1/");
  EXPECT_EQ(l.broker(3), "/strata/c1/brokers/3");
  EXPECT_EQ(l.broker_id_of(l.broker(3)), 3);
  EXPECT_FALSE(l.broker_id_of("/strata/c1/brokers/x"));
  EXPECT_FALSE(l.broker_id_of("/strata/c2/brokers/3"));
  EXPECT_EQ(l.topic_of(l.topic("orders")), "orders");
  EXPECT_FALSE(l.topic_of(l.topics()));
  auto p = l.partition_of(l.partition("orders.v2", 17));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->first, "orders.v2");
  EXPECT_EQ(p->second, 17);
  EXPECT_FALSE(l.partition_of(l.partitions() + "orders/-1"));
  EXPECT_FALSE(l.partition_of(l.partitions() + "orders"));
}

TEST(Records, RoundTrip) {
  BrokerRecord b{2, "10.0.0.2", 9092, "rack-a", true, {}};
  EXPECT_EQ(*decode_broker(encode(b)), b);
  ControllerRecord c{2, 41};
  EXPECT_EQ(*decode_controller(encode(c)), c);
  TopicRecord t{
      "orders", "AAAAAAAAAAAAAAAAAAAAAQ", {{1, 2, 3}, {2, 3, 1}}, {{"cleanup.policy", "compact"}}};
  EXPECT_EQ(*decode_topic(encode(t)), t);
  PartitionState s{2, 7, {2, 3}, 12};
  EXPECT_EQ(*decode_partition(encode(s)), s);
  EXPECT_EQ(encode(s).find("adding_replicas"), std::string::npos) << "absent unless reassigning";
  PartitionState moving{2, 7, {2, 3}, 12, {4}, {3}};
  EXPECT_EQ(*decode_partition(encode(moving)), moving);
  EXPECT_EQ(*decode_counter(encode_counter("next", 5000), "next"), 5000);
}

TEST(Records, BrokerEndpointsPerListener) {
  BrokerRecord b{3,     "10.0.0.3",
                 9092,  "",
                 false, {{"PLAINTEXT", "10.0.0.3:9092"}, {"SASL_SSL", "broker3.example:9094"}}};
  auto back = decode_broker(encode(b));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, b);
  EXPECT_EQ(endpoint_for(b, "SASL_SSL"), std::make_pair(std::string("broker3.example"), 9094));
  EXPECT_EQ(endpoint_for(b, "PLAINTEXT"), std::make_pair(std::string("10.0.0.3"), 9092));
  // A listener the broker did not register (or an older record): its host/port.
  EXPECT_EQ(endpoint_for(b, "INTERNAL"), std::make_pair(std::string("10.0.0.3"), 9092));
  BrokerRecord bad = b;
  bad.endpoints["X"] = "no-port";
  EXPECT_EQ(endpoint_for(bad, "X"), std::make_pair(std::string("10.0.0.3"), 9092));
  EXPECT_EQ(decode_broker(R"({"id":1,"host":"h","port":1,"endpoints":[1]})").status().code(),
            Errc::corruption);
}

TEST(Records, ToleratesNewFieldsRejectsWrongTypes) {
  auto b = decode_broker(R"({"id":1,"host":"h","port":1,"future":{"x":1}})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->rack, "");
  EXPECT_EQ(decode_broker(R"({"id":"one"})").status().code(), Errc::corruption);
  EXPECT_EQ(decode_broker(R"({"host":"h"})").status().code(), Errc::corruption);
  EXPECT_EQ(decode_partition("not json").status().code(), Errc::corruption);
  EXPECT_EQ(decode_partition(R"({"isr":[1,"x"]})").status().code(), Errc::corruption);
  EXPECT_EQ(decode_topic(R"([1,2])").status().code(), Errc::corruption);
}

}  // namespace
}  // namespace strata::broker::cluster
