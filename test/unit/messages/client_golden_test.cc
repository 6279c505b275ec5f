// Golden request frames captured from real Kafka clients (librdkafka 2.0.2 through kcat and
// confluent_kafka's AdminClient, kafka-python 2.0.2, KafkaJS 2.2.4) by tools/capture_frames.py;
// the frames and how each was captured are in test/unit/messages/golden/ (README.md).
// Each frame (request header + body, without the size prefix) must decode with the generated
// message of its api to the fields the client was asked to send, consume every byte, and
// re-encode to the identical bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/messages/api_table.h"
#include "protocol/messages/headers.h"
#include "protocol/messages/messages.h"
#include "protocol/record/record.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"
#include "protocol/wire/decode_error.h"

#ifndef STRATA_GOLDEN_DIR
#error "STRATA_GOLDEN_DIR must name test/unit/messages/golden (set in meson.build)"
#endif

namespace strata::protocol {
namespace {

constexpr std::string_view kTopic = "golden";

std::vector<uint8_t> read_frame(const std::string& name) {
  std::ifstream in(std::string(STRATA_GOLDEN_DIR) + "/" + name, std::ios::binary);
  if (!in) return {};
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string_view as_text(std::span<const uint8_t> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// One golden frame decoded. `bytes` owns the memory that decoded Records view.
template <typename Req>
struct Golden {
  std::vector<uint8_t> bytes;
  int16_t header_version = -1;
  RequestHeader header;
  Req req;
};

// Loads `name`, checks api key/version/client id, decodes header + body, checks that every byte
// was consumed and that header + body re-encode (and size) to exactly the frame.
template <typename Req>
void decode_golden(const std::string& name, int16_t version, const std::string& client_id,
                   Golden<Req>& g) {
  SCOPED_TRACE(name);
  g.bytes = read_frame(name);
  ASSERT_FALSE(g.bytes.empty()) << "missing golden frame " << STRATA_GOLDEN_DIR << "/" << name;
  auto kv = peek_api_key_version(g.bytes.data(), g.bytes.size());
  ASSERT_EQ(kv.api_key, Req::kApiKey);
  ASSERT_EQ(kv.api_version, version);
  g.header_version = request_header_version(kv.api_key, kv.api_version);
  ASSERT_GE(g.header_version, 1);
  Reader r(g.bytes.data(), g.bytes.size());
  try {
    g.header.decode(r, g.header_version);
    g.req.decode(r, version);
  } catch (const DecodeError& e) {
    FAIL() << "decode failed at byte " << (g.bytes.size() - r.remaining()) << ": " << e.what();
  }
  EXPECT_EQ(g.header.request_api_key, Req::kApiKey);
  EXPECT_EQ(g.header.request_api_version, version);
  EXPECT_GE(g.header.correlation_id, 0);
  EXPECT_EQ(g.header.client_id, std::optional<std::string>(client_id));
  EXPECT_EQ(r.remaining(), 0u) << "undecoded trailing bytes";

  Writer w;
  g.header.encode(w, g.header_version);
  g.req.encode(w, version);
  EXPECT_TRUE(w.external().empty());
  EXPECT_EQ(w.buffer(), g.bytes) << "re-encoding differs from the client's bytes";
  EXPECT_EQ(g.header.size(g.header_version) + g.req.size(version), g.bytes.size());
}

// The single record every producer session sent: key "k1", value "v1", header h1="x".
void expect_golden_batch(const Records& records) {
  ASSERT_FALSE(records.is_null);
  ASSERT_EQ(records.parts.size(), 1u);
  const RecordsPart& part = records.parts[0];
  ASSERT_FALSE(part.is_file());
  std::span<const uint8_t> bytes(part.data, part.length);
  ASSERT_EQ(peek_batch_size(bytes), bytes.size()) << "exactly one batch";
  RecordBatchView batch(bytes);
  ASSERT_EQ(batch.validate(), BatchCheck::ok) << batch_check_name(batch.validate());
  EXPECT_EQ(batch.magic(), 2);
  EXPECT_EQ(batch.base_offset(), 0);
  EXPECT_EQ(batch.record_count(), 1);
  EXPECT_EQ(batch.last_offset_delta(), 0);
  EXPECT_EQ(batch.compression(), codec::Compression::none);
  EXPECT_EQ(batch.timestamp_type(), TimestampType::create_time);
  EXPECT_FALSE(batch.is_transactional());
  EXPECT_FALSE(batch.is_control());
  EXPECT_EQ(batch.producer_id(), -1);                // not idempotent
  EXPECT_GT(batch.base_timestamp(), 1600000000000);  // wall-clock ms, after 2020
  EXPECT_EQ(batch.max_timestamp(), batch.base_timestamp());

  auto reader = RecordReader::open(batch);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  Record rec;
  auto more = reader->next(rec);
  ASSERT_TRUE(more.ok()) << more.status().to_string();
  ASSERT_TRUE(*more);
  EXPECT_EQ(rec.offset_delta, 0);
  EXPECT_EQ(rec.timestamp_delta, 0);
  ASSERT_TRUE(rec.key.has_value());
  EXPECT_EQ(as_text(*rec.key), "k1");
  ASSERT_TRUE(rec.value.has_value());
  EXPECT_EQ(as_text(*rec.value), "v1");
  ASSERT_EQ(rec.header_count, 1);
  auto headers = rec.headers();
  Header h;
  ASSERT_TRUE(headers.next(h));
  EXPECT_EQ(h.key, "h1");
  ASSERT_TRUE(h.value.has_value());
  EXPECT_EQ(as_text(*h.value), "x");
  EXPECT_FALSE(headers.next(h));
  auto end = reader->next(rec);
  ASSERT_TRUE(end.ok()) << end.status().to_string();
  EXPECT_FALSE(*end);
}

void expect_produce(const std::string& name, const std::string& client_id, int16_t acks) {
  Golden<ProduceRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden(name, 7, client_id, g));
  SCOPED_TRACE(name);
  EXPECT_FALSE(g.req.transactional_id.has_value());
  EXPECT_EQ(g.req.acks, acks);
  EXPECT_EQ(g.req.timeout_ms, 30000);
  ASSERT_EQ(g.req.topic_data.size(), 1u);
  EXPECT_EQ(g.req.topic_data[0].name, kTopic);
  ASSERT_EQ(g.req.topic_data[0].partition_data.size(), 1u);
  EXPECT_EQ(g.req.topic_data[0].partition_data[0].index, 0);
  expect_golden_batch(g.req.topic_data[0].partition_data[0].records);
}

// One CreateTopics entry for "golden" with one partition, no assignments or configs.
void expect_create_topics(const std::string& name, int16_t version, const std::string& client_id,
                          int16_t replication_factor, int32_t timeout_ms) {
  Golden<CreateTopicsRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden(name, version, client_id, g));
  SCOPED_TRACE(name);
  ASSERT_EQ(g.req.topics.size(), 1u);
  const auto& t = g.req.topics[0];
  EXPECT_EQ(t.name, kTopic);
  EXPECT_EQ(t.num_partitions, 1);
  EXPECT_EQ(t.replication_factor, replication_factor);
  EXPECT_TRUE(t.assignments.empty());
  EXPECT_TRUE(t.configs.empty());
  EXPECT_EQ(g.req.timeout_ms, timeout_ms);
  EXPECT_FALSE(g.req.validate_only);
}

// ListOffsets for "golden" partition 0 at EARLIEST (-2), as seek-to-beginning sends it.
void expect_list_offsets_earliest(const Golden<ListOffsetsRequest>& g) {
  EXPECT_EQ(g.req.replica_id, -1);
  ASSERT_EQ(g.req.topics.size(), 1u);
  EXPECT_EQ(g.req.topics[0].name, kTopic);
  ASSERT_EQ(g.req.topics[0].partitions.size(), 1u);
  EXPECT_EQ(g.req.topics[0].partitions[0].partition_index, 0);
  EXPECT_EQ(g.req.topics[0].partitions[0].timestamp, -2);
}

// The fetch of "golden" partition 0 from offset 0 every consumer starts with.
void expect_fetch_from_start(const FetchRequest& req) {
  EXPECT_EQ(req.replica_id, -1);
  EXPECT_EQ(req.max_wait_ms, 500);
  EXPECT_EQ(req.min_bytes, 1);
  EXPECT_EQ(req.max_bytes, 52428800);
  ASSERT_EQ(req.topics.size(), 1u);
  EXPECT_EQ(req.topics[0].topic, kTopic);
  ASSERT_EQ(req.topics[0].partitions.size(), 1u);
  const auto& p = req.topics[0].partitions[0];
  EXPECT_EQ(p.partition, 0);
  EXPECT_EQ(p.fetch_offset, 0);
  EXPECT_EQ(p.partition_max_bytes, 1048576);
  EXPECT_TRUE(req.forgotten_topics_data.empty());
}

// ---- librdkafka 2.0.2 (client.id "rdkafka") ----

TEST(ClientGolden, LibrdkafkaKcatApiVersionsV3) {
  Golden<ApiVersionsRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("librdkafka-kcat_api_versions_v3.bin", 3, "rdkafka", g));
  EXPECT_EQ(g.header_version, 2);
  EXPECT_EQ(g.req.client_software_name, "librdkafka");
  EXPECT_EQ(g.req.client_software_version, "2.0.2");
}

TEST(ClientGolden, LibrdkafkaAdminApiVersionsV3) {
  Golden<ApiVersionsRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("librdkafka-admin_api_versions_v3.bin", 3, "rdkafka", g));
  EXPECT_EQ(g.req.client_software_name, "confluent-kafka-python");
  EXPECT_EQ(g.req.client_software_version, "1.7.0-rdkafka-2.0.2");
}

TEST(ClientGolden, LibrdkafkaKcatMetadataV4NamesTheTopic) {
  Golden<MetadataRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("librdkafka-kcat_metadata_v4.bin", 4, "rdkafka", g));
  ASSERT_TRUE(g.req.topics.has_value());
  ASSERT_EQ(g.req.topics->size(), 1u);
  EXPECT_EQ((*g.req.topics)[0].name, std::optional<std::string>("golden"));
  EXPECT_TRUE(g.req.allow_auto_topic_creation);
}

TEST(ClientGolden, LibrdkafkaAdminMetadataV4NoTopics) {
  Golden<MetadataRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("librdkafka-admin_metadata_v4.bin", 4, "rdkafka", g));
  ASSERT_TRUE(g.req.topics.has_value());  // an empty list (brokers only), not null (all topics)
  EXPECT_TRUE(g.req.topics->empty());
  EXPECT_FALSE(g.req.allow_auto_topic_creation);
}

TEST(ClientGolden, LibrdkafkaAdminCreateTopicsV4) {
  expect_create_topics("librdkafka-admin_create_topics_v4.bin", 4, "rdkafka", 1, 60000);
}

TEST(ClientGolden, LibrdkafkaKcatProduceV7) {
  expect_produce("librdkafka-kcat_produce_v7.bin", "rdkafka", -1);
}

TEST(ClientGolden, LibrdkafkaKcatListOffsetsV2) {
  Golden<ListOffsetsRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("librdkafka-kcat_list_offsets_v2.bin", 2, "rdkafka", g));
  EXPECT_EQ(g.req.isolation_level, 1);  // read_committed, librdkafka's default
  expect_list_offsets_earliest(g);
}

TEST(ClientGolden, LibrdkafkaKcatFetchV11) {
  Golden<FetchRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("librdkafka-kcat_fetch_v11.bin", 11, "rdkafka", g));
  expect_fetch_from_start(g.req);
  EXPECT_EQ(g.req.isolation_level, 1);
  EXPECT_EQ(g.req.session_id, 0);
  EXPECT_EQ(g.req.session_epoch, -1);  // no fetch session
  EXPECT_EQ(g.req.rack_id, "");
  const auto& p = g.req.topics.at(0).partitions.at(0);
  EXPECT_EQ(p.current_leader_epoch, -1);
  EXPECT_EQ(p.log_start_offset, -1);
}

// ---- kafka-python 2.0.2 ----

TEST(ClientGolden, KafkaPythonApiVersionsV0) {
  Golden<ApiVersionsRequest> g;
  ASSERT_NO_FATAL_FAILURE(
      decode_golden("kafka-python_api_versions_v0.bin", 0, "kafka-python-2.0.2", g));
  EXPECT_EQ(g.header_version, 1);
  EXPECT_EQ(g.req.client_software_name, "");  // v3+ fields are absent
}

TEST(ClientGolden, KafkaPythonMetadataV0AllTopics) {
  Golden<MetadataRequest> g;
  ASSERT_NO_FATAL_FAILURE(
      decode_golden("kafka-python_metadata_v0.bin", 0, "kafka-python-2.0.2", g));
  ASSERT_TRUE(g.req.topics.has_value());  // v0: an empty list means all topics
  EXPECT_TRUE(g.req.topics->empty());
}

TEST(ClientGolden, KafkaPythonMetadataV1Null) {
  Golden<MetadataRequest> g;
  ASSERT_NO_FATAL_FAILURE(
      decode_golden("kafka-python_metadata_v1.bin", 1, "kafka-python-2.0.2", g));
  EXPECT_FALSE(g.req.topics.has_value());
}

TEST(ClientGolden, KafkaPythonMetadataV5NullNoAutoCreate) {
  Golden<MetadataRequest> g;
  ASSERT_NO_FATAL_FAILURE(
      decode_golden("kafka-python_metadata_v5.bin", 5, "kafka-python-2.0.2", g));
  EXPECT_FALSE(g.req.topics.has_value());
  EXPECT_FALSE(g.req.allow_auto_topic_creation);
}

TEST(ClientGolden, KafkaPythonCreateTopicsV3) {
  expect_create_topics("kafka-python_create_topics_v3.bin", 3, "kafka-python-2.0.2", 1, 30000);
}

TEST(ClientGolden, KafkaPythonProduceV7) {
  // The producer names itself kafka-python-producer-<n>; acks defaults to 1.
  expect_produce("kafka-python_produce_v7.bin", "kafka-python-producer-1", 1);
}

TEST(ClientGolden, KafkaPythonListOffsetsV1) {
  Golden<ListOffsetsRequest> g;
  ASSERT_NO_FATAL_FAILURE(
      decode_golden("kafka-python_list_offsets_v1.bin", 1, "kafka-python-2.0.2", g));
  expect_list_offsets_earliest(g);
}

TEST(ClientGolden, KafkaPythonFetchV4) {
  Golden<FetchRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("kafka-python_fetch_v4.bin", 4, "kafka-python-2.0.2", g));
  expect_fetch_from_start(g.req);
  EXPECT_EQ(g.req.isolation_level, 0);  // read_uncommitted
}

// ---- KafkaJS 2.2.4 (default clientId "kafkajs") ----

TEST(ClientGolden, KafkajsApiVersionsV2) {
  Golden<ApiVersionsRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("kafkajs_api_versions_v2.bin", 2, "kafkajs", g));
  EXPECT_EQ(g.header_version, 1);
}

TEST(ClientGolden, KafkajsMetadataV6Null) {
  Golden<MetadataRequest> g;
  ASSERT_NO_FATAL_FAILURE(decode_golden("kafkajs_metadata_v6.bin", 6, "kafkajs", g));
  EXPECT_FALSE(g.req.topics.has_value());
  EXPECT_FALSE(g.req.allow_auto_topic_creation);
}

TEST(ClientGolden, KafkajsCreateTopicsV3DefaultReplicationFactor) {
  // KafkaJS sends replication factor -1 (broker default) unless told otherwise.
  expect_create_topics("kafkajs_create_topics_v3.bin", 3, "kafkajs", -1, 5000);
}

TEST(ClientGolden, KafkajsProduceV7) { expect_produce("kafkajs_produce_v7.bin", "kafkajs", -1); }

// Every frame in the directory is one the tests above assert, named after the api and version
// its header carries (so a re-capture that adds frames must add assertions too).
TEST(ClientGolden, DirectoryHoldsExactlyTheAssertedFrames) {
  const std::set<std::string> expected = {
      "librdkafka-admin_api_versions_v3.bin",  "librdkafka-admin_metadata_v4.bin",
      "librdkafka-admin_create_topics_v4.bin", "librdkafka-kcat_api_versions_v3.bin",
      "librdkafka-kcat_metadata_v4.bin",       "librdkafka-kcat_produce_v7.bin",
      "librdkafka-kcat_list_offsets_v2.bin",   "librdkafka-kcat_fetch_v11.bin",
      "kafka-python_api_versions_v0.bin",      "kafka-python_metadata_v0.bin",
      "kafka-python_metadata_v1.bin",          "kafka-python_metadata_v5.bin",
      "kafka-python_create_topics_v3.bin",     "kafka-python_produce_v7.bin",
      "kafka-python_list_offsets_v1.bin",      "kafka-python_fetch_v4.bin",
      "kafkajs_api_versions_v2.bin",           "kafkajs_metadata_v6.bin",
      "kafkajs_create_topics_v3.bin",          "kafkajs_produce_v7.bin",
  };
  std::set<std::string> found;
  for (const auto& entry : std::filesystem::directory_iterator(STRATA_GOLDEN_DIR)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".bin") continue;
    found.insert(name);
    SCOPED_TRACE(name);
    auto bytes = read_frame(name);
    ASSERT_GE(bytes.size(), 4u);
    EXPECT_LT(bytes.size(), 16u * 1024);
    auto kv = peek_api_key_version(bytes.data(), bytes.size());
    const ApiInfo* api = find_api(kv.api_key);
    ASSERT_NE(api, nullptr);
    EXPECT_GE(kv.api_version, api->min_version);
    EXPECT_LE(kv.api_version, api->max_version);
    // <client>_<api snake name>_v<version>.bin
    const std::string suffix = "_v" + std::to_string(kv.api_version) + ".bin";
    ASSERT_TRUE(name.ends_with(suffix));
    const std::string stem = name.substr(0, name.size() - suffix.size());
    const std::string api_part = stem.substr(stem.find('_') + 1);
    std::string camel;  // metadata -> Metadata, list_offsets -> ListOffsets
    bool upper = true;
    for (char c : api_part) {
      if (c == '_') {
        upper = true;
        continue;
      }
      camel += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
    EXPECT_EQ(camel, api->name);
  }
  EXPECT_EQ(found, expected);
}

}  // namespace
}  // namespace strata::protocol
