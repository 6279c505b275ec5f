// Unit tests of broker/metrics (issue 6): the lock-free histogram, the /proc parsers, the
// metrics.listener syntax, and BrokerMetrics' counters as they appear in the exposition text.
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cmath>
#include <thread>
#include <vector>

#include "broker/metrics/atomic_histogram.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/metrics/exporter.h"
#include "broker/metrics/process_stats.h"
#include "broker/topics/topic_registry.h"
#include "storage/log_manager.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::metrics {
namespace {

TEST(AtomicHistogram, BucketsAreCumulativeAndInclusive) {
  const double bounds[] = {0.1, 1, 10};
  AtomicHistogram h(bounds);
  for (double v : {0.05, 0.1, 0.5, 1.0, 3.0, 10.0, 11.0, 1e9}) h.observe(v);
  auto s = h.snapshot();
  ASSERT_EQ(s.bucket.size(), 4u);
  EXPECT_EQ(s.bucket[0].cumulative_count, 2u);  // 0.05, 0.1 (le is inclusive)
  EXPECT_EQ(s.bucket[1].cumulative_count, 4u);  // + 0.5, 1.0
  EXPECT_EQ(s.bucket[2].cumulative_count, 6u);  // + 3, 10
  EXPECT_EQ(s.bucket[3].cumulative_count, 8u);
  EXPECT_TRUE(std::isinf(s.bucket[3].upper_bound));
  EXPECT_EQ(s.sample_count, 8u);
  EXPECT_DOUBLE_EQ(s.sample_sum, 0.05 + 0.1 + 0.5 + 1.0 + 3.0 + 10.0 + 11.0 + 1e9);
}

TEST(AtomicHistogram, ConcurrentObservationsAreAllCounted) {
  AtomicHistogram h;
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&h, t] {
      for (int i = 0; i < 20000; ++i) h.observe(0.0005 * (t + 1));
    });
  }
  for (auto& t : ts) t.join();
  auto s = h.snapshot();
  EXPECT_EQ(s.sample_count, 80000u);
  EXPECT_EQ(h.count(), 80000u);
  EXPECT_NEAR(s.sample_sum, 20000 * 0.0005 * (1 + 2 + 3 + 4), 1e-6);
}

TEST(AtomicHistogram, SumIsExactInNanosecondsAndIgnoresNegatives) {
  AtomicHistogram h;
  for (int i = 0; i < 10; ++i) h.observe(0.1);  // a double accumulator ends at 0.9999999999999999
  h.observe(-5);                                // counted (first bucket), adds nothing to the sum
  h.observe(0.0000000004);                      // rounds to 0 ns
  h.observe(0.0000000006);                      // rounds to 1 ns
  auto s = h.snapshot();
  EXPECT_EQ(s.sample_count, 13u);
  EXPECT_EQ(s.bucket[0].cumulative_count, 3u);
  EXPECT_EQ(s.sample_sum, 1.000000001);
}

TEST(ProcessStats, ParsesProcStatWithHostileCommandName) {
  // comm = "a) (b c" : fields are counted from the last ')'.
  const std::string stat =
      "1234 (a) (b c) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 150 0 0 20 0 8 0 4242 1000000 300 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto s = parse_proc_stat(stat, 100);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 4.0);  // (250 + 150) / 100
  EXPECT_DOUBLE_EQ(s->start_time_ticks, 4242);
  EXPECT_FALSE(parse_proc_stat("garbage", 100).has_value());
  EXPECT_FALSE(parse_proc_stat("1 (x) S 1 2", 100).has_value());
}

TEST(ProcessStats, ParsesStatmAndBootTime) {
  EXPECT_EQ(parse_statm_resident("1000 250 30 1 0 90 0\n", 4096), 250u * 4096);
  EXPECT_FALSE(parse_statm_resident("1000", 4096).has_value());
  EXPECT_EQ(parse_boot_time("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 1700000000);
  EXPECT_FALSE(parse_boot_time("cpu 1\n").has_value());
}

TEST(ProcessStats, ReadsThisProcess) {
  auto fams = collect_process_metrics();
  std::map<std::string, double> v;
  for (const auto& f : fams) {
    ASSERT_EQ(f.metric.size(), 1u) << f.name;
    v[f.name] = f.type == prometheus::MetricType::Counter ? f.metric[0].counter.value
                                                          : f.metric[0].gauge.value;
  }
  EXPECT_GT(v.at("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(v.at("process_open_fds"), 3);  // stdin/stdout/stderr at least
  EXPECT_GE(v.at("process_cpu_seconds_total"), 0);
  EXPECT_GT(v.at("process_start_time_seconds"), 1.5e9);
}

TEST(MetricsListener, Syntax) {
  auto a = parse_metrics_listener("127.0.0.1:9644");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9644);
  auto any = parse_metrics_listener(":0");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->host, "");
  EXPECT_EQ(any->port, 0);
  auto v6 = parse_metrics_listener("[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  for (const char* bad : {"localhost", "a:b", "1.2.3.4:70000", "::1:80", "host:", "h:-1"}) {
    EXPECT_FALSE(parse_metrics_listener(bad).ok()) << bad;
  }
}

std::string text_of(const BrokerMetrics& m,
                    const std::vector<std::shared_ptr<const TopicEntry>>& topics = {}) {
  return prometheus::TextSerializer().Serialize(m.collect(topics));
}

TEST(BrokerMetrics, CountsRequestsErrorsAndLatencyByApi) {
  BrokerMetrics m({0, 1, 16000});
  m.request_received(0);
  m.request_received(0);
  m.request_received(16000);
  m.request_received(3);  // not served: ignored
  m.request_completed(0, 0.002);
  using protocol::ErrorCode;
  m.request_error(0, ErrorCode::unknown_topic_or_partition, 2);
  m.request_error(0, ErrorCode::none);  // "none" is not an error
  m.request_error(1, ErrorCode::unknown_server_error);
  m.request_error(1, static_cast<ErrorCode>(30000));  // outside the table: UNKNOWN_SERVER_ERROR
  m.request_error(-5, ErrorCode::unknown_topic_or_partition);  // unknown key: ignored
  const std::string t = text_of(m);
  EXPECT_NE(t.find("strata_requests_total{api=\"Produce\"} 2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("strata_requests_total{api=\"Fetch\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("strata_requests_total{api=\"Lookup\"} 1\n"), std::string::npos);
  EXPECT_EQ(t.find("api=\"Metadata\""), std::string::npos);
  EXPECT_NE(
      t.find("strata_request_errors_total{api=\"Produce\",error=\"UNKNOWN_TOPIC_OR_PARTITION\","
             "code=\"3\"} 2\n"),
      std::string::npos)
      << t;
  EXPECT_NE(t.find("strata_request_errors_total{api=\"Fetch\",error=\"UNKNOWN_SERVER_ERROR\","
                   "code=\"-1\"} 2\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("strata_request_duration_seconds_count{api=\"Produce\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("strata_request_duration_seconds_bucket{api=\"Produce\",le=\"0.0025\"} 1\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("strata_request_duration_seconds_bucket{api=\"Produce\",le=\"0.001\"} 0\n"),
            std::string::npos);
}

TEST(BrokerMetrics, ConnectionsAndTopicCountersOfTheGivenTopics) {
  BrokerMetrics m({0});
  m.connection_opened();
  m.connection_opened();
  m.connection_closed();
  EXPECT_EQ(m.active_connections(), 1);
  auto a = std::make_shared<TopicEntry>();
  auto b = std::make_shared<TopicEntry>();
  a->name = "alpha";
  b->name = "beta";
  b->configs["table.type"] = "primary-key";
  ASSERT_NE(a->counters, nullptr);
  ASSERT_NE(a->counters, b->counters);
  a->counters->bytes_in += 100;
  a->counters->records_in += 4;
  auto a2 = std::make_shared<TopicEntry>(*a);  // a config change copies the entry: same counters
  EXPECT_EQ(a2->counters, a->counters);
  b->counters->bytes_out += 7;
  std::string t = text_of(m, {a2, b});
  EXPECT_NE(t.find("strata_connections_active 1\n"), std::string::npos) << t;
  EXPECT_NE(t.find("strata_connections_total 2\n"), std::string::npos);
  EXPECT_NE(t.find("strata_topic_bytes_in_total{topic=\"alpha\"} 100\n"), std::string::npos);
  EXPECT_NE(t.find("strata_topic_records_in_total{topic=\"alpha\"} 4\n"), std::string::npos);
  EXPECT_NE(t.find("strata_topic_bytes_out_total{topic=\"beta\"} 7\n"), std::string::npos);
  EXPECT_NE(t.find("strata_topic_bytes_out_total{topic=\"alpha\"} 0\n"), std::string::npos);
  EXPECT_NE(t.find("strata_pk_rows_applied_total{topic=\"beta\"} 0\n"), std::string::npos);
  // PK series only for primary-key tables.
  EXPECT_EQ(t.find("strata_pk_rows_applied_total{topic=\"alpha\"}"), std::string::npos);
  t = text_of(m, {b});  // alpha deleted: its series are gone
  EXPECT_EQ(t.find("topic=\"alpha\""), std::string::npos) << t;
  EXPECT_NE(t.find("strata_topic_bytes_out_total{topic=\"beta\"} 7\n"), std::string::npos);
}

// The registry gives every topic its counters, keeps them across copy-on-write replacements
// (config change, new partitions) and gives a re-created topic fresh ones; a request that still
// holds the counters of a deleted topic can keep bumping them (this was a use-after-free when the
// counters lived in a map pruned at scrape).
TEST(BrokerMetrics, TopicCountersFollowTheRegistry) {
  storage::testing::TempDir dir;
  auto logs =
      storage::LogManager::open(storage::default_env(), {dir.sub("d")}, 1,
                                [](const storage::TopicMeta&) { return storage::LogConfig{}; });
  ASSERT_TRUE(logs.ok()) << logs.status().to_string();
  BrokerConfig config;
  TopicRegistry topics(**logs, config);
  ASSERT_TRUE(topics.load().ok());
  auto created = topics.create("t", 1, {}, false);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  std::shared_ptr<metrics::TopicCounters> held = (*created)->counters;
  held->bytes_in += 5;
  ASSERT_TRUE(topics.alter_configs("t", {{"retention.ms", "1000"}}, false).ok());
  ASSERT_TRUE(topics.add_partitions("t", 3, false).ok());
  BrokerMetrics m({0});
  auto entry = topics.find("t");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->partitions.size(), 3u);
  EXPECT_EQ(entry->counters, held);
  EXPECT_NE(text_of(m, topics.list()).find("strata_topic_bytes_in_total{topic=\"t\"} 5\n"),
            std::string::npos);

  entry.reset();
  ASSERT_TRUE(topics.remove("t").ok());
  EXPECT_EQ(text_of(m, topics.list()).find("topic=\"t\""), std::string::npos);
  held->records_in += 3;  // still valid memory after the delete and a scrape
  EXPECT_EQ(held->records_in.load(), 3u);

  auto again = topics.create("t", 1, {}, false);
  ASSERT_TRUE(again.ok());
  EXPECT_NE((*again)->counters, held);
  EXPECT_NE(text_of(m, topics.list()).find("strata_topic_bytes_in_total{topic=\"t\"} 0\n"),
            std::string::npos);
  ASSERT_TRUE((*logs)->close_all().ok());
}

TEST(BrokerMetrics, ApiNames) {
  EXPECT_EQ(api_name(0), "Produce");
  EXPECT_EQ(api_name(18), "ApiVersions");
  EXPECT_EQ(api_name(16001), "PrefixLookup");
  EXPECT_EQ(api_name(9999), "Api9999");
}

}  // namespace
}  // namespace strata::broker::metrics
