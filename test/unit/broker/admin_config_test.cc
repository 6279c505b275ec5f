// Issue 4 (admin half): the topic config table, the dynamic config layers (sources, persistence,
// validation), IncrementalAlterConfigs operations.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <set>
#include <sstream>

#include "broker/config/dynamic_config.h"
#include "broker/config/topic_config.h"
#include "storage/env.h"
#include "storage/file_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker {
namespace {

using storage::testing::TempDir;

const ConfigEntryInfo& entry(const std::vector<ConfigEntryInfo>& v, const std::string& name) {
  for (const auto& e : v) {
    if (e.name == name) return e;
  }
  ADD_FAILURE() << "no entry " << name;
  static ConfigEntryInfo none;
  return none;
}

BrokerConfig static_config(const TempDir& dir, std::vector<std::string> extra = {}) {
  extra.push_back("log.dirs=" + dir.path());
  auto c = parse_config("log.retention.ms=1000\n", extra);
  EXPECT_TRUE(c.ok()) << c.status().to_string();
  return *c;
}

TEST(TopicConfigTable, EveryKeyIsDocumentedAndHasAValidDefault) {
  for (const auto& k : topic_key_table()) {
    EXPECT_NE(k.doc, "") << k.name;
    EXPECT_NE(k.type, ConfigType::unknown) << k.name;
    if (k.default_value != "") {
      EXPECT_TRUE(k.check(k.default_value).ok()) << k.name << "=" << k.default_value;
    }
  }
}

TEST(TopicConfigTable, ValidationNamesTheKey) {
  auto st = validate_topic_configs({{"retention.ms", "abc"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("retention.ms"), std::string::npos) << st.message();
  st = validate_topic_configs({{"no.such.key", "1"}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no.such.key"), std::string::npos);
  EXPECT_TRUE(validate_topic_configs({{"cleanup.policy", "compact,delete"}}).ok());
  EXPECT_FALSE(validate_topic_configs({{"cleanup.policy", "compact,shred"}}).ok());
  EXPECT_FALSE(validate_topic_configs({{"segment.bytes", "13"}}).ok());
}

TEST(TopicConfigTable, DefaultsComeFromTheBrokerSynonym) {
  TempDir dir;
  auto b = static_config(dir);
  auto v = effective_topic_values({}, b);
  EXPECT_EQ(v.at("retention.ms"), "1000");
  EXPECT_EQ(v.at("segment.bytes"), "1073741824");
  EXPECT_EQ(resolve_topic_config({{"retention.ms", "5"}}, b).retention_ms, 5);
}

// Captures what spdlog's default logger writes while alive.
class LogCapture {
 public:
  LogCapture() : saved_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_));
    logger->set_pattern("[%l] %v");
    spdlog::set_default_logger(logger);
  }
  ~LogCapture() { spdlog::set_default_logger(saved_); }
  std::string text() const { return out_.str(); }
  size_t count(const std::string& needle) const {
    size_t n = 0;
    const std::string t = text();
    for (size_t at = t.find(needle); at != std::string::npos; at = t.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> saved_;
};

TEST(TopicConfigTable, Kafka3DeprecatedKeysAreAcceptedStoredAndIgnored) {
  const std::map<std::string, std::string> deprecated = {
      {"message.format.version", "0.10.2"}, {"message.downconversion.enable", "false"}};
  {
    LogCapture log;
    EXPECT_TRUE(validate_topic_configs(deprecated).ok());
    // One warning line naming every deprecated key of the map.
    EXPECT_EQ(log.count("[warning]"), 1u) << log.text();
    EXPECT_NE(log.text().find("message.format.version=0.10.2"), std::string::npos) << log.text();
    EXPECT_NE(log.text().find("message.downconversion.enable=false"), std::string::npos);
  }
  {
    LogCapture log;
    EXPECT_TRUE(validate_topic_configs({{"retention.ms", "5"}}).ok());
    EXPECT_EQ(log.text(), "");  // no warning without a deprecated key
  }
  for (const char* v : {"3.0-IV1", "2.8", "0.8.2", "0.10.0-IV0", "0.10.0.1", "3.9"}) {
    EXPECT_TRUE(validate_topic_config("message.format.version", v).ok()) << v;
  }
  for (const char* v : {"", "3", "abc", "3.0-", "3.0-IVx", "3..0", "3.0.", "-3.0"}) {
    auto st = validate_topic_config("message.format.version", v);
    ASSERT_FALSE(st.ok()) << v;
    EXPECT_NE(st.message().find("message.format.version"), std::string::npos);
  }
  for (const char* v : {"true", "false", "TRUE", "False"}) {
    EXPECT_TRUE(validate_topic_config("message.downconversion.enable", v).ok()) << v;
  }
  EXPECT_FALSE(validate_topic_config("message.downconversion.enable", "yes").ok());
  EXPECT_FALSE(validate_topic_config("message.downconversion.enable", "1").ok());
  // Kafka 3.x's defaults, no broker synonym, flagged deprecated, alterable (not read-only).
  for (const char* name : {"message.format.version", "message.downconversion.enable"}) {
    const TopicKeyDef* k = find_topic_key(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_TRUE(k->flags & kConfigDeprecated) << name;
    EXPECT_FALSE(k->flags & kConfigReadOnly) << name;
    EXPECT_EQ(k->synonym, "") << name;
  }
  EXPECT_EQ(find_topic_key("message.format.version")->type, ConfigType::string);
  EXPECT_EQ(find_topic_key("message.downconversion.enable")->type, ConfigType::boolean);
  TempDir dir;
  auto b = static_config(dir);
  auto v = effective_topic_values({}, b);
  EXPECT_EQ(v.at("message.format.version"), "3.0-IV1");
  EXPECT_EQ(v.at("message.downconversion.enable"), "true");
  // Ignored: the resolved config is the one without them.
  auto with = resolve_topic_config(deprecated, b);
  auto without = resolve_topic_config({}, b);
  EXPECT_EQ(with.log.segment_bytes, without.log.segment_bytes);
  EXPECT_EQ(with.max_message_bytes, without.max_message_bytes);
  EXPECT_EQ(with.compression, without.compression);
  EXPECT_EQ(with.log_append_time, without.log_append_time);
  EXPECT_EQ(with.retention_ms, without.retention_ms);
  // DescribeConfigs: the value as set from DYNAMIC_TOPIC_CONFIG, else the 3.x default.
  auto dc = DynamicConfig::load(storage::default_env(), b);
  ASSERT_TRUE(dc.ok()) << dc.status().to_string();
  auto set = (*dc)->describe_topic(deprecated, {});
  EXPECT_EQ(entry(set, "message.format.version").value, "0.10.2");
  EXPECT_EQ(entry(set, "message.format.version").source, ConfigSource::dynamic_topic);
  EXPECT_EQ(entry(set, "message.downconversion.enable").value, "false");
  EXPECT_EQ(entry(set, "message.downconversion.enable").type, ConfigType::boolean);
  auto unset = (*dc)->describe_topic({}, {});
  EXPECT_EQ(entry(unset, "message.format.version").value, "3.0-IV1");
  EXPECT_EQ(entry(unset, "message.format.version").source, ConfigSource::default_config);
  EXPECT_EQ(entry(unset, "message.downconversion.enable").value, "true");
}

TEST(DynamicConfig, SourcesOfBrokerAndTopicEntries) {
  TempDir dir;
  auto dc = DynamicConfig::load(storage::default_env(), static_config(dir));
  ASSERT_TRUE(dc.ok()) << dc.status().to_string();
  auto broker = (*dc)->describe_broker(false, {});
  EXPECT_EQ(entry(broker, "log.retention.ms").source, ConfigSource::static_broker);
  EXPECT_EQ(entry(broker, "log.retention.ms").value, "1000");
  EXPECT_FALSE(entry(broker, "log.retention.ms").read_only);
  EXPECT_EQ(entry(broker, "log.segment.bytes").source, ConfigSource::default_config);
  EXPECT_TRUE(entry(broker, "log.dirs").read_only);
  EXPECT_EQ(entry(broker, "log.dirs").source, ConfigSource::static_broker);

  auto topic = (*dc)->describe_topic({{"segment.bytes", "4096"}}, {});
  const auto& seg = entry(topic, "segment.bytes");
  EXPECT_EQ(seg.source, ConfigSource::dynamic_topic);
  EXPECT_EQ(seg.value, "4096");
  ASSERT_EQ(seg.synonyms.size(), 2u);
  EXPECT_EQ(seg.synonyms[1].name, "log.segment.bytes");
  EXPECT_EQ(seg.synonyms[1].source, ConfigSource::default_config);
  const auto& ret = entry(topic, "retention.ms");
  EXPECT_EQ(ret.source, ConfigSource::static_broker);
  EXPECT_EQ(ret.value, "1000");
  EXPECT_EQ(ret.type, ConfigType::long_);
  EXPECT_FALSE(ret.doc.empty());
  // Only the requested keys.
  EXPECT_EQ((*dc)->describe_topic({}, {"retention.ms"}).size(), 1u);
}

TEST(DynamicConfig, ReplaceIsDurableAndLayered) {
  TempDir dir;
  auto env = storage::default_env();
  {
    auto dc = DynamicConfig::load(env, static_config(dir));
    ASSERT_TRUE(dc.ok());
    auto eff = (*dc)->replace(true, {{"log.retention.ms", "2000"}});
    ASSERT_TRUE(eff.ok()) << eff.status().to_string();
    EXPECT_EQ((*eff)->log_retention_ms, 2000);
    eff = (*dc)->replace(false, {{"log.retention.ms", "3000"}});
    ASSERT_TRUE(eff.ok());
    EXPECT_EQ((*eff)->log_retention_ms, 3000);
  }
  auto dc = DynamicConfig::load(env, static_config(dir));
  ASSERT_TRUE(dc.ok()) << dc.status().to_string();
  EXPECT_EQ((*dc)->effective()->log_retention_ms, 3000);
  auto e = entry((*dc)->describe_broker(false, {}), "log.retention.ms");
  EXPECT_EQ(e.source, ConfigSource::dynamic_broker);
  ASSERT_EQ(e.synonyms.size(), 4u);  // broker, cluster default, static, default
  EXPECT_EQ(e.synonyms[1].source, ConfigSource::dynamic_default_broker);
  EXPECT_EQ(e.synonyms[1].value, "2000");
  // The cluster-default resource lists only what was set on it.
  auto d = (*dc)->describe_broker(true, {});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].source, ConfigSource::dynamic_default_broker);
  // Topics inherit through the layers.
  EXPECT_EQ(resolve_topic_config({}, *(*dc)->effective()).retention_ms, 3000);
  EXPECT_EQ(entry((*dc)->describe_topic({}, {}), "retention.ms").source,
            ConfigSource::dynamic_broker);
}

TEST(DynamicConfig, RejectsStaticOnlyKeysAndBadValuesWithoutWriting) {
  TempDir dir;
  auto dc = DynamicConfig::load(storage::default_env(), static_config(dir));
  ASSERT_TRUE(dc.ok());
  auto r = (*dc)->replace(false, {{"log.dirs", "/elsewhere"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("log.dirs"), std::string::npos);
  r = (*dc)->replace(false, {{"log.retention.ms", "soon"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("log.retention.ms"), std::string::npos);
  r = (*dc)->replace(true, {{"no.such.key", "1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no.such.key"), std::string::npos);
  EXPECT_FALSE(storage::default_env()->file_exists((*dc)->path()));
  EXPECT_EQ((*dc)->effective()->log_retention_ms, 1000);
}

TEST(DynamicConfig, ListenerKeyAndTrustStoresArePerBrokerDynamicKeys) {
  TempDir dir;
  auto dc = DynamicConfig::load(
      storage::default_env(),
      static_config(dir, {"listeners=SSL://127.0.0.1:0", "ssl.keystore.location=/etc/a.pem",
                          "listener.name.ssl.ssl.client.auth=none"}));
  ASSERT_TRUE(dc.ok()) << dc.status().to_string();
  const std::string loc = "listener.name.ssl.ssl.keystore.location";
  EXPECT_TRUE(DynamicConfig::is_dynamic_key(loc));
  EXPECT_TRUE(DynamicConfig::is_dynamic_key("listener.name.ssl.ssl.truststore.certificates"));
  EXPECT_FALSE(DynamicConfig::is_dynamic_key("listener.name.ssl.ssl.client.auth"));
  EXPECT_FALSE(DynamicConfig::is_dynamic_key("ssl.keystore.location"));  // listener prefix only
  EXPECT_EQ(broker_key_type(loc), ConfigType::string);
  // The cluster default cannot hold one broker's certificates.
  auto r = (*dc)->replace(true, {{loc, "/etc/b.pem"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("broker id must be specified"), std::string::npos);
  r = (*dc)->replace(false, {{"listener.name.ssl.ssl.client.auth", "required"}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("dynamically"), std::string::npos);

  r = (*dc)->replace(false, {{loc, "/etc/b.pem"}, {"listener.name.ssl.ssl.keystore.key", "k"}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto all = (*dc)->describe_broker(false, {});
  const auto& e = entry(all, loc);
  EXPECT_EQ(e.value, "/etc/b.pem");
  EXPECT_EQ(e.source, ConfigSource::dynamic_broker);
  EXPECT_FALSE(e.read_only);
  // Synonyms: the listener's own value, then the broker-wide key's layers.
  ASSERT_EQ(e.synonyms.size(), 3u);
  EXPECT_EQ(e.synonyms[1].name, "ssl.keystore.location");
  EXPECT_EQ(e.synonyms[1].source, ConfigSource::static_broker);
  EXPECT_EQ(e.synonyms[2].source, ConfigSource::default_config);
  // A private key is never shown; a static per-listener key is listed read-only.
  const auto& key = entry(all, "listener.name.ssl.ssl.keystore.key");
  EXPECT_TRUE(key.sensitive);
  EXPECT_FALSE(key.value.has_value());
  EXPECT_TRUE(entry(all, "listener.name.ssl.ssl.client.auth").read_only);
  // The preview is what replace() would give, with nothing stored.
  auto p = (*dc)->preview(false, {{loc, "/etc/c.pem"}});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->values.at(loc), "/etc/c.pem");
  EXPECT_EQ((*dc)->effective()->values.at(loc), "/etc/b.pem");
}

TEST(AlterItems, SetDeleteAppendSubtract) {
  auto eff = [](const std::string&) { return std::string("delete"); };
  auto r = apply_alter_items({{"retention.ms", "1"}},
                             {{"retention.ms", AlterOp::remove, std::nullopt},
                              {"cleanup.policy", AlterOp::append, "compact"},
                              {"segment.bytes", AlterOp::set, "4096"}},
                             topic_key_type, eff);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, (ConfigMap{{"cleanup.policy", "delete,compact"}, {"segment.bytes", "4096"}}));
  r = apply_alter_items(*r, {{"cleanup.policy", AlterOp::subtract, "delete"}}, topic_key_type, eff);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at("cleanup.policy"), "compact");
  r = apply_alter_items({}, {{"retention.ms", AlterOp::append, "5"}}, topic_key_type, eff);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("retention.ms"), std::string::npos);
  r = apply_alter_items({}, {{"nope", AlterOp::set, "5"}}, topic_key_type, eff);
  ASSERT_FALSE(r.ok());
  r = apply_alter_items({}, {{"retention.ms", AlterOp::set, std::nullopt}}, topic_key_type, eff);
  ASSERT_FALSE(r.ok());
}

}  // namespace
}  // namespace strata::broker

namespace strata::broker {
namespace {

TEST(BrokerKeyTable, DynamicKeysAreTheTopicSynonymsAndTheCleanerRate) {
  // Besides the topic synonyms: the cleaner's rate and the replication throttles.
  std::set<std::string> synonyms = {"log.cleaner.io.max.bytes.per.second",
                                    "leader.replication.throttled.rate",
                                    "follower.replication.throttled.rate"};
  for (const auto& k : topic_key_table()) {
    if (!k.synonym.empty()) synonyms.insert(k.synonym);
  }
  std::set<std::string> dynamic;
  for (const auto& k : config_keys()) {
    if (!k.read_only()) dynamic.insert(k.name);
    EXPECT_EQ(DynamicConfig::is_dynamic_key(k.name), !k.read_only()) << k.name;
  }
  EXPECT_EQ(dynamic, synonyms);
}

TEST(BrokerKeyTable, TypesComeFromTheTable) {
  // A broker synonym has its topic key's type.
  for (const auto& k : topic_key_table()) {
    if (!k.synonym.empty()) {
      EXPECT_EQ(broker_key_type(k.synonym), k.type) << k.name;
    }
  }
  EXPECT_EQ(broker_key_type("log.cleaner.io.max.bytes.per.second"), ConfigType::double_);
  EXPECT_EQ(broker_key_type("queued.max.request.bytes"), ConfigType::long_);
  EXPECT_EQ(broker_key_type("group.initial.rebalance.delay.ms"), ConfigType::int_);
  EXPECT_EQ(broker_key_type("auto.create.topics.enable"), ConfigType::boolean);
  EXPECT_EQ(broker_key_type("listeners"), ConfigType::list);
  EXPECT_EQ(broker_key_type("log.level"), ConfigType::string);
  EXPECT_EQ(broker_key_type("no.such.key"), ConfigType::unknown);
  EXPECT_EQ(topic_key_type("table.kv.snapshot.interval.ms"), ConfigType::long_);
  TempDir dir;
  auto dc = DynamicConfig::load(storage::default_env(), static_config(dir));
  ASSERT_TRUE(dc.ok());
  const auto rate = entry((*dc)->describe_broker(false, {}), "log.cleaner.io.max.bytes.per.second");
  EXPECT_EQ(rate.type, ConfigType::double_);
  EXPECT_FALSE(rate.read_only);
  EXPECT_NE(rate.doc, "");
}

// A scope of its own, only for this test: the mechanism, not a product table.
struct TestScope {
  int32_t port{};
  bool on{};
  std::string mode;
  std::string secret;
};

TEST(KeyTableMechanism, DefaultsParsingErrorsAndSensitiveDescribe) {
  KeyTable<TestScope> t(ConfigMessages::kafka, /*dynamic_by_default=*/false);
  t.integer("test.port", &TestScope::port, "9", 1, 65535, "A port.", kConfigDynamic);
  t.boolean("test.on", &TestScope::on, "true", "On.");
  t.one_of("test.mode", &TestScope::mode, "a", {"a", "b"}, "Mode.");
  t.password("test.secret", &TestScope::secret, "", "A password.", kConfigDynamic);
  TestScope s;
  t.apply_defaults(s);
  EXPECT_EQ(s.port, 9);
  EXPECT_TRUE(s.on);
  EXPECT_EQ(s.mode, "a");
  EXPECT_TRUE(t.find("test.port")->apply("80", &s).ok());
  EXPECT_EQ(s.port, 80);
  EXPECT_TRUE(t.find("test.on")->apply("FALSE", &s).ok());  // Kafka's wording: any case
  EXPECT_FALSE(s.on);
  auto st = t.find("test.port")->check("70000");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "Invalid value 70000 for configuration test.port: Value must be no more "
            "than 65535");
  st = t.find("test.mode")->check("c");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "Invalid value c for configuration test.mode: String must be one of: a, b");
  EXPECT_FALSE(t.find("test.port")->read_only());
  EXPECT_TRUE(t.find("test.on")->read_only());  // read-only unless marked dynamic here

  const auto& secret = *t.find("test.secret");
  EXPECT_EQ(secret.type, ConfigType::password);
  EXPECT_TRUE(secret.sensitive());
  EXPECT_FALSE(secret.read_only());
  auto e = describe_entry(secret, {{"test.secret", "hunter2", ConfigSource::dynamic_broker},
                                   {"test.secret", "", ConfigSource::default_config}});
  EXPECT_TRUE(e.sensitive);
  EXPECT_FALSE(e.value.has_value());
  EXPECT_EQ(e.source, ConfigSource::dynamic_broker);
  EXPECT_EQ(e.type, ConfigType::password);
  ASSERT_EQ(e.synonyms.size(), 2u);
  for (const auto& syn : e.synonyms) EXPECT_FALSE(syn.value.has_value());
  // A key that is not sensitive keeps its values.
  auto p = describe_entry(*t.find("test.port"), {{"test.port", "80", ConfigSource::static_broker}});
  EXPECT_FALSE(p.sensitive);
  EXPECT_EQ(p.value, "80");
  EXPECT_EQ(p.type, ConfigType::int_);
  EXPECT_EQ(p.doc, "A port.");
}

}  // namespace
}  // namespace strata::broker
