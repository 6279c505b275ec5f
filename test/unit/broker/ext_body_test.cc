// The bounded parsing of extension request bodies (broker/handlers/ext_common.h): keys counted on
// the wire bytes without decoding, and requests over the bounds refused before ParseFromArray.
#include <gtest/gtest.h>

#include <string>

#include "broker/handlers/ext_common.h"
#include "protocol/ext/lookup.pb.h"
#include "protocol/wire/reader.h"

namespace strata::broker::handlers {
namespace {

constexpr int kKeys[] = {1, 2, 2};  // LookupRequest.topics -> partitions -> keys

std::string lookup_wire(int topics, int partitions, int keys) {
  ext::LookupRequest req;
  for (int t = 0; t < topics; ++t) {
    auto* tk = req.add_topics();
    std::string topic = "t";
    topic += std::to_string(t);  // (not "t" + ...: GCC 12 warns falsely on that, -Wrestrict)
    tk->set_topic(topic);
    for (int p = 0; p < partitions; ++p) {
      auto* pk = tk->add_partitions();
      pk->set_partition(p);
      for (int k = 0; k < keys; ++k) {
        std::string key = "k";
        key += std::to_string(k);
        pk->add_keys(key);
      }
    }
  }
  req.set_max_bytes(123);
  return req.SerializeAsString();
}

std::span<const uint8_t> span_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(ExtBody, CountsKeysWithoutDecoding) {
  const std::string wire = lookup_wire(3, 4, 5);
  EXPECT_EQ(count_wire_fields(span_of(wire), kKeys, 1000), 60u);
  EXPECT_EQ(count_wire_fields(span_of(wire), std::span<const int>(kKeys, 1), 1000), 3u);  // topics
  // The walk stops once past the bound.
  EXPECT_EQ(count_wire_fields(span_of(wire), kKeys, 7), 8u);
  EXPECT_EQ(count_wire_fields({}, kKeys, 10), 0u);
}

TEST(ExtBody, MalformedBytesAreNotCounted) {
  const std::string wire = lookup_wire(1, 1, 3);
  // (the last 2 bytes are max_bytes: 3 cut into the last key)
  EXPECT_EQ(count_wire_fields(span_of(wire.substr(0, wire.size() - 3)), kKeys, 100), std::nullopt);
  const std::string zero_tag("\x00\x01", 2);
  EXPECT_EQ(count_wire_fields(span_of(zero_tag), kKeys, 100), std::nullopt);
  const std::string long_len("\x0a\x7f\x12\x02", 4);  // a topic longer than the body
  EXPECT_EQ(count_wire_fields(span_of(long_len), kKeys, 100), std::nullopt);
}

TEST(ExtBody, ParseRefusesBeforeDecodingAndConsumesTheBody) {
  const std::string wire = lookup_wire(2, 2, 10);  // 40 keys
  auto parse = [&](const std::string& bytes, ExtBodyLimits limits) {
    protocol::Reader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    ext::LookupRequest req;
    const ExtBody got = parse_ext_body(r, req, limits);
    EXPECT_EQ(r.remaining(), 0u);
    if (got != ExtBody::ok) {
      EXPECT_EQ(req.topics_size(), 0) << "decoded although refused";
    }
    return got;
  };
  EXPECT_EQ(parse(wire, ExtBodyLimits{wire.size(), kKeys, 40}), ExtBody::ok);
  EXPECT_EQ(parse(wire, ExtBodyLimits{wire.size(), kKeys, 39}), ExtBody::too_many);
  EXPECT_EQ(parse(wire, ExtBodyLimits{wire.size() - 1, kKeys, 40}), ExtBody::too_large);
  EXPECT_EQ(parse(wire.substr(0, wire.size() - 3), ExtBodyLimits{wire.size(), kKeys, 40}),
            ExtBody::undecodable);
  EXPECT_EQ(parse(wire, ExtBodyLimits{}), ExtBody::ok);
}

}  // namespace
}  // namespace strata::broker::handlers
