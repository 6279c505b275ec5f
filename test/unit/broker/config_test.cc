#include "broker/config/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "broker/config/topic_config.h"

namespace strata::broker {
namespace {

TEST(BrokerConfig, DefaultsMatchKafkaNames) {
  auto c = parse_config("", {});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->node_id, 1);
  ASSERT_EQ(c->listeners.size(), 1u);
  EXPECT_EQ(c->listeners[0].host, "127.0.0.1");
  EXPECT_EQ(c->listeners[0].port, 9092);
  EXPECT_EQ(c->log_dirs, std::vector<std::string>{"./data"});
  EXPECT_EQ(c->message_max_bytes, 1048588);
  EXPECT_EQ(c->log_flush_interval_messages, INT64_MAX);
  EXPECT_TRUE(c->auto_create_topics_enable);
}

TEST(BrokerConfig, FileThenOverridesLaterWins) {
  auto c = parse_config("# comment\n! also\n\nnum.partitions = 3\nlog.dirs=/a, /b\n",
                        {"num.partitions=6", "listeners=PLAINTEXT://0.0.0.0:0"});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->num_partitions, 6);
  EXPECT_EQ(c->log_dirs, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(c->listeners[0].port, 0);
  EXPECT_EQ(c->values.at("num.partitions"), "6");
}

TEST(BrokerConfig, UnknownKeyIsNamed) {
  auto c = parse_config("no.such.key=1\n", {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("no.such.key"), std::string::npos);
  auto o = parse_config("", {"bogus=2"});
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("bogus"), std::string::npos);
}

TEST(BrokerConfig, BadValuesAreNamed) {
  for (const char* bad :
       {"num.partitions=zero", "num.partitions=0", "auto.create.topics.enable=yes",
        "listeners=localhost:9092", "log.message.timestamp.type=Now", "message.max.bytes=-5",
        "default.replication.factor=0", "coordination.lease.ttl.seconds=1", "min.insync.replicas=0",
        "coordination.etcd.prefix=strata", "unclean.leader.election.enable=TRUE"}) {
    auto c = parse_config("", {bad});
    ASSERT_FALSE(c.ok()) << bad;
    std::string key(bad, std::string(bad).find('='));
    EXPECT_NE(c.status().message().find(key), std::string::npos) << c.status().message();
  }
}

TEST(BrokerConfig, ShippedServerPropertiesListsEveryKeyWithItsDefault) {
  std::ifstream in(STRATA_SOURCE_DIR "/config/server.properties");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  std::set<std::string> seen;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    seen.insert(line.substr(0, line.find('=')));
  }
  for (const auto& k : config_keys()) {
    EXPECT_NE(text.find(std::string(k.name) + "=" + k.default_value + "\n"), std::string::npos)
        << "config/server.properties lacks " << k.name << "=" << k.default_value;
    seen.erase(k.name);
  }
  EXPECT_TRUE(seen.empty()) << "server.properties has a key the broker does not know: "
                            << *seen.begin();
  // And the file as shipped parses.
  EXPECT_TRUE(parse_config(text, {}).ok());
  // Exactly: a comment header (up to the first blank line), then what --print-default-config
  // prints — every key once, in table order, "# doc" above "key=default", test.* keys commented
  // out — and nothing else (no unknown key, commented out or not; no key twice).
  const size_t body = text.find("\n\n");
  ASSERT_NE(body, std::string::npos);
  std::istringstream header(text.substr(0, body));
  while (std::getline(header, line)) EXPECT_EQ(line.rfind("# ", 0), 0u) << line;
  EXPECT_EQ(text.substr(body + 2), default_config_text());
}

TEST(BrokerConfig, DefaultConfigTextListsEveryKeyOnceWithItsDefault) {
  const std::string text = default_config_text();
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> keys;
  while (std::getline(lines, line)) {
    if (line.empty() || line.rfind("# ", 0) == 0) continue;
    std::string kv = line[0] == '#' ? line.substr(1) : line;
    EXPECT_EQ(line[0] == '#', kv.rfind("test.", 0) == 0) << line;  // only test.* commented out
    const BrokerKeyDef* k = find_broker_key(kv.substr(0, kv.find('=')));
    ASSERT_NE(k, nullptr) << line;
    EXPECT_EQ(kv.substr(kv.find('=') + 1), k->default_value);
    keys.push_back(k->name);
  }
  ASSERT_EQ(keys.size(), config_keys().size());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(keys[i], config_keys()[i].name);
}

TEST(BrokerConfig, StructDefaultsComeFromTheTable) {
  const BrokerConfig d;  // default-constructed: the table's defaults
  auto p = parse_config("", {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(d.message_max_bytes, 1048588);
  EXPECT_EQ(d.message_max_bytes, p->message_max_bytes);
  EXPECT_EQ(d.log_cleaner_io_max_bytes_per_second, 1.7976931348623157e308);
  EXPECT_EQ(d.log_dirs, p->log_dirs);
  EXPECT_EQ(d.listeners.size(), 1u);
  EXPECT_EQ(d.values, p->values);
  EXPECT_TRUE(d.explicit_keys.empty());
  for (const auto& k : config_keys()) {
    EXPECT_TRUE(k.check(k.default_value).ok()) << k.name;
    EXPECT_FALSE(k.doc.empty()) << k.name;
    EXPECT_NE(k.type, ConfigType::unknown) << k.name;
  }
}

TEST(BrokerConfig, RangeAndEnumErrorsNameKeyAndBound) {
  struct Case {
    const char* set;
    const char* bound;
  } cases[] = {{"num.partitions=0", "[1, 100000]"},
               {"pk.checkpoint.retained=101", "[1, 100]"},
               {"log.cleaner.min.cleanable.ratio=2", "[0, 1]"},
               {"log.cleaner.io.max.bytes.per.second=0", "[1, 1.7976931348623157e+308]"},
               {"log.level=loud", "trace, debug, info, warn, error, critical, off"},
               {"compression.type=brotli", "producer, uncompressed, none, gzip"}};
  for (const auto& c : cases) {
    auto r = parse_config("", {c.set});
    ASSERT_FALSE(r.ok()) << c.set;
    const std::string key(c.set, std::string(c.set).find('='));
    EXPECT_NE(r.status().message().find(key), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.bound), std::string::npos) << r.status().message();
  }
}

TEST(BrokerConfig, ClusterKeysHaveKafkasDefaults) {
  const BrokerConfig c;
  EXPECT_TRUE(c.coordination_etcd_endpoints.empty());  // a single node
  EXPECT_EQ(c.coordination_etcd_prefix, "/strata");
  EXPECT_EQ(c.coordination_lease_ttl_seconds, 4);  // failover within 5 s (docs/benchmarks.md)
  EXPECT_EQ(c.broker_rack, "");
  EXPECT_EQ(c.default_replication_factor, 1);
  EXPECT_EQ(c.min_insync_replicas, 1);
  EXPECT_FALSE(c.unclean_leader_election_enable);
  EXPECT_EQ(c.replica_lag_time_max_ms, 30000);
  EXPECT_EQ(c.replica_fetch_max_bytes, 1048576);
  EXPECT_EQ(c.replica_fetch_wait_max_ms, 500);
  EXPECT_EQ(c.replica_fetch_backoff_ms, 1000);
  EXPECT_EQ(find_broker_key("coordination.etcd.endpoints")->type, ConfigType::list);
  // The broker defaults of topic keys may change at runtime, as in Kafka; the rest may not.
  EXPECT_FALSE(find_broker_key("min.insync.replicas")->read_only());
  EXPECT_FALSE(find_broker_key("unclean.leader.election.enable")->read_only());
  EXPECT_TRUE(find_broker_key("coordination.etcd.endpoints")->read_only());
  EXPECT_TRUE(find_broker_key("replica.lag.time.max.ms")->read_only());
}

TEST(BrokerConfig, EtcdEndpointsSplitOnCommasAndEachIsChecked) {
  auto c = parse_config(
      "coordination.etcd.endpoints = 127.0.0.1:2379, http://10.0.0.2:2379/ ,"
      "[::1]:32379\n",
      {});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->coordination_etcd_endpoints,
            (std::vector<std::string>{"127.0.0.1:2379", "http://10.0.0.2:2379/", "[::1]:32379"}));
  auto one = parse_config("", {"coordination.etcd.endpoints=localhost:2379"});
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_EQ(one->coordination_etcd_endpoints, std::vector<std::string>{"localhost:2379"});
  // Set to nothing (or blanks): a single node again.
  for (const char* none : {"coordination.etcd.endpoints=", "coordination.etcd.endpoints=  "}) {
    auto n = parse_config("coordination.etcd.endpoints=a:1\n", {none});
    ASSERT_TRUE(n.ok()) << none << ": " << n.status().to_string();
    EXPECT_TRUE(n->coordination_etcd_endpoints.empty()) << none;
  }
  for (const char* bad :
       {"a:1,,b:2", "a:1,", ",a:1", "a:1, ", "nohost", "a:", ":2379", "https://a:2379", "a:23x9"}) {
    auto r = parse_config("", {std::string("coordination.etcd.endpoints=") + bad});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("coordination.etcd.endpoints"), std::string::npos)
        << r.status().message();
  }
}

TEST(BrokerConfig, ClusterKeyBounds) {
  auto lo = parse_config("", {"coordination.lease.ttl.seconds=2", "min.insync.replicas=3",
                              "default.replication.factor=3", "broker.rack=eu-1a",
                              "coordination.etcd.prefix=/test/run-7",
                              "unclean.leader.election.enable=true", "replica.fetch.max.bytes=0",
                              "replica.fetch.backoff.ms=0", "replica.fetch.wait.max.ms=0"});
  ASSERT_TRUE(lo.ok()) << lo.status().to_string();
  EXPECT_EQ(lo->coordination_lease_ttl_seconds, 2);
  EXPECT_EQ(lo->min_insync_replicas, 3);
  EXPECT_EQ(lo->default_replication_factor, 3);
  EXPECT_EQ(lo->broker_rack, "eu-1a");
  EXPECT_EQ(lo->coordination_etcd_prefix, "/test/run-7");
  EXPECT_TRUE(lo->unclean_leader_election_enable);
  EXPECT_EQ(lo->replica_fetch_wait_max_ms, 0);
  struct Case {
    const char* set;
    const char* bound;
  } cases[] = {{"coordination.lease.ttl.seconds=1", "[2, 2147483647]"},
               {"min.insync.replicas=0", "[1, 2147483647]"},
               {"default.replication.factor=0", "[1, 32767]"},
               {"default.replication.factor=32768", "not an integer"},
               {"replica.lag.time.max.ms=0", "[1, 9223372036854775807]"},
               {"replica.fetch.max.bytes=-1", "[0, 2147483647]"},
               {"replica.fetch.backoff.ms=-1", "[0, 2147483647]"},
               {"coordination.etcd.prefix=", "must start with '/'"},
               {"coordination.etcd.prefix=/a b", "spaces"}};
  for (const auto& c : cases) {
    auto r = parse_config("", {c.set});
    ASSERT_FALSE(r.ok()) << c.set;
    const std::string key(c.set, std::string(c.set).find('='));
    EXPECT_NE(r.status().message().find(key), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(c.bound), std::string::npos) << r.status().message();
  }
  // As Kafka requires: a follower's fetch may not wait longer than the lag that drops it.
  auto wait = parse_config("", {"replica.lag.time.max.ms=400"});
  ASSERT_FALSE(wait.ok());
  EXPECT_NE(wait.status().message().find("replica.fetch.wait.max.ms"), std::string::npos);
  EXPECT_TRUE(
      parse_config("", {"replica.lag.time.max.ms=400", "replica.fetch.wait.max.ms=400"}).ok());
}

TEST(TopicConfig, ReplicationKeysAreTopicKeysWithBrokerSynonyms) {
  for (const char* name : {"min.insync.replicas", "unclean.leader.election.enable"}) {
    const TopicKeyDef* k = find_topic_key(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(k->synonym, name);  // Kafka's broker default has the same name
    EXPECT_FALSE(k->read_only()) << name;
  }
  const TopicConfig d;
  EXPECT_EQ(d.min_insync_replicas, 1);
  EXPECT_FALSE(d.unclean_leader_election_enable);
  EXPECT_TRUE(validate_topic_configs(
                  {{"min.insync.replicas", "2"}, {"unclean.leader.election.enable", "TRUE"}})
                  .ok());
  auto st = validate_topic_configs({{"min.insync.replicas", "0"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1");
  EXPECT_FALSE(validate_topic_configs({{"unclean.leader.election.enable", "yes"}}).ok());
  // Broker defaults reach topics without an override; an override wins.
  auto b = parse_config("", {"min.insync.replicas=2", "unclean.leader.election.enable=true"});
  ASSERT_TRUE(b.ok());
  auto t = resolve_topic_config({}, *b);
  EXPECT_EQ(t.min_insync_replicas, 2);
  EXPECT_TRUE(t.unclean_leader_election_enable);
  auto o = resolve_topic_config(
      {{"min.insync.replicas", "3"}, {"unclean.leader.election.enable", "false"}}, *b);
  EXPECT_EQ(o.min_insync_replicas, 3);
  EXPECT_FALSE(o.unclean_leader_election_enable);
  EXPECT_EQ(effective_topic_values({}, *b).at("min.insync.replicas"), "2");
}

TEST(TopicConfig, SynonymDefaultsHaveOneSource) {
  // A topic key with a broker synonym has no default of its own: it is the synonym's.
  for (const auto& k : topic_key_table()) {
    if (k.synonym.empty()) continue;
    const BrokerKeyDef* b = find_broker_key(k.synonym);
    ASSERT_NE(b, nullptr) << k.name;
    EXPECT_EQ(k.default_value, b->default_value) << k.name;
  }
  EXPECT_EQ(find_topic_key("max.message.bytes")->synonym, "message.max.bytes");
  // The structs' defaults agree with the tables'.
  const TopicConfig t;
  const BrokerConfig b;
  EXPECT_EQ(t.max_message_bytes, b.message_max_bytes);
  EXPECT_EQ(t.log.segment_bytes, b.log_segment_bytes);
  EXPECT_EQ(t.retention_ms, b.log_retention_ms);
  EXPECT_EQ(t.cleanup_policy, "delete");
  EXPECT_TRUE(t.delete_enabled);
  EXPECT_FALSE(t.compact);
  EXPECT_EQ(t.min_cleanable_dirty_ratio, 0.5);
}

TEST(TopicConfig, ValidationNamesTheKey) {
  EXPECT_TRUE(
      validate_topic_configs({{"segment.bytes", "1048576"}, {"compression.type", "lz4"}}).ok());
  auto st = validate_topic_configs({{"segment.bytez", "1"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("segment.bytez"), std::string::npos);
  st = validate_topic_configs({{"compression.type", "brotli"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("compression.type"), std::string::npos);
  EXPECT_FALSE(validate_topic_configs({{"retention.ms", "-2"}}).ok());
  EXPECT_FALSE(validate_topic_configs({{"message.timestamp.type", "Now"}}).ok());
}

TEST(TopicConfig, InheritsBrokerDefaults) {
  auto b = parse_config("", {"log.segment.bytes.min=1024", "log.segment.bytes=2048",
                             "compression.type=zstd", "log.message.timestamp.type=LogAppendTime"});
  ASSERT_TRUE(b.ok());
  auto t = resolve_topic_config({}, *b);
  EXPECT_EQ(t.log.segment_bytes, 2048);
  EXPECT_EQ(t.compression, StoredCompression::zstd);
  EXPECT_TRUE(t.log_append_time);
  auto o = resolve_topic_config({{"segment.bytes", "4096"},
                                 {"compression.type", "producer"},
                                 {"message.timestamp.type", "CreateTime"}},
                                *b);
  EXPECT_EQ(o.log.segment_bytes, 4096);
  EXPECT_EQ(o.compression, StoredCompression::producer);
  EXPECT_FALSE(o.log_append_time);
}

TEST(SegmentFloor, BrokerSegmentBytesBelowTheFloorIsRefused) {
  EXPECT_EQ(BrokerConfig().log_segment_bytes_min, 1048576);  // Kafka 4.0's floor
  auto c = parse_config("", {"log.segment.bytes=65536"});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("log.segment.bytes.min"), std::string::npos)
      << c.status().message();
  EXPECT_TRUE(parse_config("", {"log.segment.bytes=1048576"}).ok());
  EXPECT_TRUE(parse_config("", {"log.segment.bytes.min=1000", "log.segment.bytes=1000"}).ok());
  EXPECT_FALSE(parse_config("", {"log.segment.bytes.min=13"}).ok());  // Kafka 3.x's minimum: 14
}

TEST(SegmentFloor, TopicSegmentBytesBelowTheFloorIsRefused) {
  const BrokerConfig b;
  auto st = check_topic_config_floors({{"segment.bytes", "14"}}, b);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), Errc::invalid_argument);  // INVALID_CONFIG
  EXPECT_NE(st.message().find("segment.bytes"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("1048576"), std::string::npos) << st.message();
  EXPECT_FALSE(check_topic_config_floors({{"segment.bytes", "1048575"}}, b).ok());
  EXPECT_TRUE(check_topic_config_floors({{"segment.bytes", "1048576"}}, b).ok());
  EXPECT_TRUE(check_topic_config_floors({{"retention.ms", "1"}}, b).ok());
  // A topic keeps a value it was given under a lower floor when other keys change.
  EXPECT_TRUE(check_topic_config_floors({{"segment.bytes", "4096"}, {"retention.ms", "1"}}, b,
                                        {{"segment.bytes", "4096"}})
                  .ok());
  EXPECT_FALSE(
      check_topic_config_floors({{"segment.bytes", "2048"}}, b, {{"segment.bytes", "4096"}}).ok());
  auto low = parse_config("", {"log.segment.bytes.min=1000"});
  ASSERT_TRUE(low.ok());
  EXPECT_TRUE(check_topic_config_floors({{"segment.bytes", "1000"}}, *low).ok());
  EXPECT_FALSE(check_topic_config_floors({{"segment.bytes", "999"}}, *low).ok());
}

}  // namespace
}  // namespace strata::broker
