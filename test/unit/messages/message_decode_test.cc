// Handwritten tests of generated message code: exact layouts of tagged fields, defaults of absent
// fields, unknown tags, truncation, hostile lengths, records parts in responses.
#include <gtest/gtest.h>
#include <unistd.h>

#include <type_traits>
#include <vector>

#include "protocol/messages/messages.h"

namespace strata::protocol {
namespace {

TEST(Messages, ApiVersionsResponseV0Layout) {
  ApiVersionsResponse resp;
  resp.api_keys.push_back({18, 0, 4});
  Writer w;
  resp.encode(w, 0);
  EXPECT_EQ(w.buffer(), (std::vector<uint8_t>{0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x12, 0x00,
                                              0x00, 0x00, 0x04}));
  EXPECT_EQ(resp.size(0), w.size());
}

TEST(Messages, ApiVersionsResponseV3TaggedFieldsOnlyWhenNotDefault) {
  ApiVersionsResponse resp;
  resp.api_keys.push_back({0, 0, 11});
  Writer plain;
  resp.encode(plain, 3);
  // error 0, compact array of 1, (0,0,11, no tags), throttle 0, no top-level tags.
  EXPECT_EQ(plain.buffer(), (std::vector<uint8_t>{0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
                                                  0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}));
  resp.finalized_features_epoch = 5;
  Writer tagged;
  resp.encode(tagged, 3);
  std::vector<uint8_t> tail(tagged.buffer().end() - 11, tagged.buffer().end());
  // 1 tagged field: tag 1, size 8, int64 5.
  EXPECT_EQ(tail, (std::vector<uint8_t>{0x01, 0x01, 0x08, 0, 0, 0, 0, 0, 0, 0, 5}));
  EXPECT_EQ(resp.size(3), tagged.size());
  ApiVersionsResponse back;
  Reader r(tagged.buffer().data(), tagged.size());
  back.decode(r, 3);
  EXPECT_EQ(back.finalized_features_epoch, 5);
  EXPECT_TRUE(back == resp);
}

TEST(Messages, AbsentFieldsGetDefaults) {
  MetadataResponse::Partition p;
  p.leader_epoch = 9;
  Writer w;
  p.encode(w, 0);  // leader_epoch is v7+
  MetadataResponse::Partition back;
  back.leader_epoch = 77;
  Reader r(w.buffer().data(), w.size());
  back.decode(r, 0);
  EXPECT_EQ(back.leader_epoch, -1);
  FetchRequest f;
  EXPECT_EQ(f.max_bytes, 0x7fffffff);
  EXPECT_EQ(f.replica_id, -1);
  MetadataResponse::Topic t;
  EXPECT_EQ(t.topic_authorized_operations, INT32_MIN);
  CreateTopicsRequest c;
  EXPECT_EQ(c.timeout_ms, 60000);
}

TEST(Messages, UnknownTagsInNestedStructsAreSkipped) {
  ListOffsetsRequest req;
  req.replica_id = -1;
  req.topics.resize(1);
  req.topics[0].name = "t";
  req.topics[0].partitions.resize(1);
  req.topics[0].partitions[0].timestamp = -2;
  Writer w;
  req.encode(w, 6);
  std::vector<uint8_t> b = w.buffer();
  // The partition's tag section is the byte after its timestamp; the last 3 bytes are
  // partition tags, topic tags, top-level tags. Replace the partition's with two unknown tags.
  size_t part_tags = b.size() - 3;
  ASSERT_EQ(b[part_tags], 0x00);
  std::vector<uint8_t> extra = {0x02, 0x05, 0x02, 0xaa, 0xbb, 0x7f, 0x00};
  b.erase(b.begin() + static_cast<long>(part_tags));
  b.insert(b.begin() + static_cast<long>(part_tags), extra.begin(), extra.end());
  ListOffsetsRequest back;
  Reader r(b.data(), b.size());
  back.decode(r, 6);
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_TRUE(back == req);
}

TEST(Messages, TruncatedInputThrowsAtEveryCut) {
  ProduceRequest req;
  req.acks = -1;
  req.timeout_ms = 1000;
  req.topic_data.resize(1);
  req.topic_data[0].name = "topic";
  req.topic_data[0].partition_data.resize(1);
  const uint8_t batch[] = {1, 2, 3, 4, 5, 6, 7};
  req.topic_data[0].partition_data[0].records = Records::view(batch);
  for (int16_t v : {int16_t{3}, int16_t{9}, int16_t{11}}) {
    Writer w;
    req.encode(w, v);
    for (size_t cut = 0; cut < w.size(); ++cut) {
      ProduceRequest back;
      Reader r(w.buffer().data(), cut);
      EXPECT_THROW(back.decode(r, v), DecodeError) << "v" << v << " cut " << cut;
    }
  }
}

TEST(Messages, HostileArrayLengthThrowsWithoutAllocating) {
  // Produce v3: transactional_id null, acks, timeout, then topic count 0x7fffffff.
  std::vector<uint8_t> b = {0xff, 0xff, 0x00, 0x01, 0x00, 0x00, 0x03, 0xe8,
                            0x7f, 0xff, 0xff, 0xff, 0x00, 0x01, 'x'};
  ProduceRequest req;
  Reader r(b.data(), b.size());
  EXPECT_THROW(req.decode(r, 3), DecodeError);
  // Flexible: compact topic count 2^31-1 with 3 bytes left.
  std::vector<uint8_t> c = {0x00, 0x00, 0x01, 0x00, 0x00, 0x03, 0xe8, 0xff,
                            0xff, 0xff, 0xff, 0x07, 0x01, 0x02, 0x03};
  Reader r2(c.data(), c.size());
  EXPECT_THROW(req.decode(r2, 9), DecodeError);
  // Records length larger than the frame.
  std::vector<uint8_t> d = {0xff, 0xff, 0x00, 0x01, 0x00, 0x00, 0x03, 0xe8, 0x00, 0x00,
                            0x00, 0x01, 0x00, 0x01, 't',  0x00, 0x00, 0x00, 0x01, 0x00,
                            0x00, 0x00, 0x00, 0x7f, 0xff, 0xff, 0xf0, 0x01};
  Reader r3(d.data(), d.size());
  EXPECT_THROW(req.decode(r3, 3), DecodeError);
}

TEST(Messages, NullInNonNullableVersionRejected) {
  // DeleteTopics v5 response: name is not nullable before v6.
  std::vector<uint8_t> b = {0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00};
  DeleteTopicsResponse resp;
  Reader r(b.data(), b.size());
  EXPECT_THROW(resp.decode(r, 5), DecodeError);
  // v6 accepts the null name.
  std::vector<uint8_t> c = {0x00, 0x00, 0x00, 0x00, 0x02, 0x00};
  for (int i = 0; i < 16; ++i) c.push_back(static_cast<uint8_t>(i));
  for (int x : {0x00, 0x64, 0x00, 0x00, 0x00}) c.push_back(static_cast<uint8_t>(x));
  Reader r2(c.data(), c.size());
  resp.decode(r2, 6);
  EXPECT_EQ(r2.remaining(), 0u);
  ASSERT_EQ(resp.responses.size(), 1u);
  EXPECT_FALSE(resp.responses[0].name.has_value());
  EXPECT_EQ(resp.responses[0].error_code, ErrorCode::unknown_topic_id);
  EXPECT_EQ(resp.responses[0].topic_id.bytes[15], 15);
}

TEST(Messages, ErrorCodeFieldsAreTypedAndKeepUnknownValues) {
  // error_code / *_error_code fields are ErrorCode, default none, int16 on the wire.
  static_assert(std::is_same_v<decltype(HeartbeatResponse::error_code), ErrorCode>);
  static_assert(std::is_same_v<decltype(CreateTopicsResponse::TopicResult::topic_config_error_code),
                               ErrorCode>);
  EXPECT_EQ(HeartbeatResponse{}.error_code, ErrorCode::none);
  EXPECT_EQ(CreateTopicsResponse::TopicResult{}.topic_config_error_code, ErrorCode::none);
  // A code this build does not know (and a negative one) decodes and re-encodes unchanged.
  for (int16_t raw : {int16_t{30000}, int16_t{-7}, int16_t{99}}) {
    SCOPED_TRACE(raw);
    Writer w;
    w.write_int32(0);  // throttle_time_ms (v1+)
    w.write_int16(raw);
    const std::vector<uint8_t> bytes = w.buffer();
    HeartbeatResponse resp;
    Reader r(bytes.data(), bytes.size());
    resp.decode(r, 1);
    EXPECT_EQ(r.remaining(), 0u);
    EXPECT_EQ(error_value(resp.error_code), raw);
    EXPECT_FALSE(error_from_code(raw).has_value());  // none of them is in Kafka's table
    Writer again;
    resp.encode(again, 1);
    EXPECT_EQ(again.buffer(), bytes);
  }
}

TEST(Messages, FetchResponseWithFileRecordsCountsExternalBytes) {
  char path[] = "/tmp/strata_fetch_resp_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> file(100);
  for (size_t i = 0; i < file.size(); ++i) file[i] = static_cast<uint8_t>(i);
  ASSERT_EQ(::write(fd, file.data(), file.size()), static_cast<ssize_t>(file.size()));

  FetchResponse resp;
  resp.responses.resize(1);
  resp.responses[0].topic = "t";
  resp.responses[0].partitions.resize(1);
  auto& p = resp.responses[0].partitions[0];
  p.high_watermark = 10;
  p.last_stable_offset = 10;
  p.records.is_null = false;
  p.records.parts.push_back(RecordsPart{nullptr, nullptr, fd, 20, 30});
  for (int16_t v : {int16_t{4}, int16_t{11}, int16_t{12}}) {
    Writer w;
    resp.encode(w, v);
    EXPECT_EQ(w.total_size(), resp.size(v));
    EXPECT_EQ(w.size() + 30, resp.size(v));
    ASSERT_EQ(w.external().size(), 1u);
    std::vector<uint8_t> flat = flatten(w);
    ASSERT_EQ(flat.size(), resp.size(v));
    FetchResponse back;
    Reader r(flat.data(), flat.size());
    back.decode(r, v);
    const auto& bp = back.responses[0].partitions[0];
    ASSERT_EQ(bp.records.size(), 30u);
    EXPECT_EQ(bp.records.parts[0].data[0], 20);
    EXPECT_EQ(bp.records.parts[0].data[29], 49);
    EXPECT_EQ(bp.high_watermark, 10);
  }
  ::close(fd);
  ::unlink(path);
}

TEST(Messages, FetchResponseV12TaggedPartitionFields) {
  FetchResponse resp;
  resp.responses.resize(1);
  resp.responses[0].partitions.resize(1);
  auto& p = resp.responses[0].partitions[0];
  p.current_leader.leader_id = 1;
  p.current_leader.leader_epoch = 3;
  Writer w;
  resp.encode(w, 12);
  EXPECT_EQ(w.size(), resp.size(12));
  FetchResponse back;
  Reader r(w.buffer().data(), w.size());
  back.decode(r, 12);
  EXPECT_EQ(back.responses[0].partitions[0].current_leader.leader_epoch, 3);
  EXPECT_EQ(back.responses[0].partitions[0].diverging_epoch.epoch, -1);  // not sent: default
  EXPECT_TRUE(back == resp);
}

}  // namespace
}  // namespace strata::protocol
