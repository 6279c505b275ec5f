// Byte-exact request frames as real clients send them (headers + bodies), decoded with the
// generated messages.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/messages/headers.h"
#include "protocol/messages/messages.h"

namespace strata::protocol {
namespace {

std::vector<uint8_t> bytes_of(std::initializer_list<int> values) {
  std::vector<uint8_t> out;
  for (int v : values) out.push_back(static_cast<uint8_t>(v));
  return out;
}

void append_str(std::vector<uint8_t>& b, const std::string& s) {
  b.insert(b.end(), s.begin(), s.end());
}

// librdkafka's first request: ApiVersions v3, request header v2.
TEST(GoldenFrames, LibrdkafkaApiVersionsV3) {
  std::vector<uint8_t> f = bytes_of({0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0x00, 0x07});
  append_str(f, "rdkafka");
  f.push_back(0x00);  // header tagged fields
  f.push_back(0x0b);  // compact string length 10 + 1
  append_str(f, "librdkafka");
  f.push_back(0x06);
  append_str(f, "2.0.2");
  f.push_back(0x00);  // body tagged fields

  auto kv = peek_api_key_version(f.data(), f.size());
  ASSERT_EQ(kv.api_key, 18);
  Reader r(f.data(), f.size());
  RequestHeader h;
  h.decode(r, request_header_version(kv.api_key, kv.api_version));
  EXPECT_EQ(h.correlation_id, 1);
  EXPECT_EQ(h.client_id, std::optional<std::string>("rdkafka"));
  ApiVersionsRequest req;
  req.decode(r, h.request_api_version);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(req.client_software_name, "librdkafka");
  EXPECT_EQ(req.client_software_version, "2.0.2");

  // And our encoder produces the same body bytes.
  Writer w;
  req.encode(w, 3);
  EXPECT_EQ(w.buffer(), std::vector<uint8_t>(f.begin() + 18, f.end()));
}

TEST(GoldenFrames, MetadataV1NullTopicsMeansAll) {
  std::vector<uint8_t> f = bytes_of({0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x07});
  append_str(f, "rdkafka");
  for (int b : {0xff, 0xff, 0xff, 0xff}) f.push_back(static_cast<uint8_t>(b));
  Reader r(f.data(), f.size());
  RequestHeader h;
  h.decode(r, request_header_version(3, 1));
  ASSERT_EQ(h.request_api_version, 1);
  MetadataRequest req;
  req.decode(r, 1);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_FALSE(req.topics.has_value());
  EXPECT_TRUE(req.allow_auto_topic_creation);  // absent before v4: default true
}

TEST(GoldenFrames, MetadataV0EmptyTopics) {
  std::vector<uint8_t> body = bytes_of({0x00, 0x00, 0x00, 0x00});
  Reader r(body.data(), body.size());
  MetadataRequest req;
  req.decode(r, 0);
  ASSERT_TRUE(req.topics.has_value());
  EXPECT_TRUE(req.topics->empty());
  // Null is not legal in v0.
  std::vector<uint8_t> null_body = bytes_of({0xff, 0xff, 0xff, 0xff});
  Reader r2(null_body.data(), null_body.size());
  EXPECT_THROW(req.decode(r2, 0), DecodeError);
}

// kafka-python style Produce v3 with a client id and one 10-byte records blob.
TEST(GoldenFrames, ProduceV3WithClientId) {
  std::vector<uint8_t> f = bytes_of({0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x05, 0x00, 0x12});
  append_str(f, "kafka-python-2.0.2");
  for (int b : std::initializer_list<int>{0xff, 0xff,                   // transactional_id null
                                          0x00, 0x01,                   // acks 1
                                          0x00, 0x00, 0x75, 0x30,       // timeout 30000
                                          0x00, 0x00, 0x00, 0x01,       // 1 topic
                                          0x00, 0x03, 'f',  'o',  'o',  // "foo"
                                          0x00, 0x00, 0x00, 0x01,       // 1 partition
                                          0x00, 0x00, 0x00, 0x02,       // index 2
                                          0x00, 0x00, 0x00, 0x0a,       // 10 bytes of records
                                          0,    1,    2,    3,    4,   5, 6, 7, 8, 9}) {
    f.push_back(static_cast<uint8_t>(b));
  }
  Reader r(f.data(), f.size());
  RequestHeader h;
  h.decode(r, request_header_version(0, 3));
  EXPECT_EQ(h.request_api_key, 0);
  EXPECT_EQ(h.request_api_version, 3);
  EXPECT_EQ(h.correlation_id, 5);
  EXPECT_EQ(h.client_id, std::optional<std::string>("kafka-python-2.0.2"));
  size_t body_start = r.position();
  ProduceRequest req;
  req.decode(r, 3);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_FALSE(req.transactional_id.has_value());
  EXPECT_EQ(req.acks, 1);
  EXPECT_EQ(req.timeout_ms, 30000);
  ASSERT_EQ(req.topic_data.size(), 1u);
  EXPECT_EQ(req.topic_data[0].name, "foo");
  ASSERT_EQ(req.topic_data[0].partition_data.size(), 1u);
  const auto& p = req.topic_data[0].partition_data[0];
  EXPECT_EQ(p.index, 2);
  ASSERT_FALSE(p.records.is_null);
  ASSERT_EQ(p.records.parts.size(), 1u);
  EXPECT_EQ(p.records.parts[0].data, f.data() + f.size() - 10);  // zero-copy view
  EXPECT_EQ(p.records.size(), 10u);
  Writer w;
  req.encode(w, 3);
  EXPECT_EQ(w.buffer(), std::vector<uint8_t>(f.begin() + static_cast<long>(body_start), f.end()));
}

// A flexible Fetch v12 request (as librdkafka 2.x sends it) with the cluster_id tag present.
TEST(GoldenFrames, FetchV12FlexibleWithClusterIdTag) {
  std::vector<uint8_t> body = bytes_of({
      0xff, 0xff, 0xff, 0xff,                          // replica_id -1
      0x00, 0x00, 0x01, 0xf4,                          // max_wait_ms 500
      0x00, 0x00, 0x00, 0x01,                          // min_bytes 1
      0x03, 0x20, 0x00, 0x00,                          // max_bytes 52428800
      0x01,                                            // isolation_level read_committed
      0x00, 0x00, 0x00, 0x00,                          // session_id
      0xff, 0xff, 0xff, 0xff,                          // session_epoch -1
      0x02,                                            // 1 topic (compact)
      0x02, 't',                                       // "t"
      0x02,                                            // 1 partition
      0x00, 0x00, 0x00, 0x00,                          // partition 0
      0x00, 0x00, 0x00, 0x05,                          // current_leader_epoch 5
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,  // fetch_offset 42
      0xff, 0xff, 0xff, 0xff,                          // last_fetched_epoch -1
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // log_start_offset -1
      0x00, 0x10, 0x00, 0x00,                          // partition_max_bytes 1 MiB
      0x00,                                            // partition tags
      0x00,                                            // topic tags
      0x01,                                            // forgotten topics: empty
      0x01,                                            // rack_id ""
      0x02,                                            // 2 tagged fields:
      0x00, 0x03, 0x03, 'c',  'i',  // tag 0 (cluster_id), size 3, compact string "ci"
      0x09, 0x01, 0x77,             // tag 9 (unknown to us), size 1: skipped
  });
  Reader r(body.data(), body.size());
  FetchRequest req;
  req.decode(r, 12);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(req.cluster_id, std::optional<std::string>("ci"));
  EXPECT_EQ(req.max_wait_ms, 500);
  EXPECT_EQ(req.max_bytes, 52428800);
  EXPECT_EQ(req.isolation_level, 1);
  ASSERT_EQ(req.topics.size(), 1u);
  EXPECT_EQ(req.topics[0].topic, "t");
  ASSERT_EQ(req.topics[0].partitions.size(), 1u);
  EXPECT_EQ(req.topics[0].partitions[0].current_leader_epoch, 5);
  EXPECT_EQ(req.topics[0].partitions[0].fetch_offset, 42);
  EXPECT_EQ(req.topics[0].partitions[0].partition_max_bytes, 1 << 20);
  EXPECT_TRUE(req.forgotten_topics_data.empty());
  EXPECT_EQ(req.rack_id, "");
  // Re-encoding drops the unknown tag 9 but keeps cluster_id.
  Writer w;
  req.encode(w, 12);
  EXPECT_EQ(w.size(), body.size() - 3);
  EXPECT_EQ(w.buffer()[w.size() - 6], 0x01);  // one tagged field now
}

}  // namespace
}  // namespace strata::protocol
