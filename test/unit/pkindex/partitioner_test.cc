#include "protocol/pk/partitioner.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::pkindex {

using namespace protocol::pk;  // wire facts: change headers, partitioners
namespace {

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// Vectors from kafka-python's murmur2 (a port of Java's Utils.murmur2) and Python's zlib.crc32.
TEST(Partitioner, Murmur2MatchesJava) {
  struct V {
    std::string key;
    uint32_t hash;
    int32_t p4;
  } vs[] = {{"", 275646681u, 1},      {"a", 2731586172u, 0},    {"ab", 316155434u, 2},
            {"abc", 479470107u, 3},   {"abcd", 2971317748u, 0}, {"hello world", 1221641059u, 3},
            {"key-17", 956945460u, 0}};
  for (const auto& v : vs) {
    EXPECT_EQ(static_cast<uint32_t>(murmur2(b(v.key))), v.hash) << v.key;
    EXPECT_EQ(partition_for_key(Partitioner::murmur2, b(v.key), 4), v.p4) << v.key;
  }
  EXPECT_EQ(murmur2(b("21")), -973932308);  // Kafka's own UtilsTest vector
}

TEST(Partitioner, Crc32MatchesLibrdkafka) {
  struct V {
    std::string key;
    uint32_t crc;
    int32_t p4;
  } vs[] = {{"a", 3904355907u, 3},    {"ab", 2659403885u, 1},         {"abc", 891568578u, 2},
            {"abcd", 3984772369u, 1}, {"hello world", 222957957u, 1}, {"key-17", 3663805983u, 3}};
  for (const auto& v : vs) {
    EXPECT_EQ(crc32_of(b(v.key)), v.crc) << v.key;
    EXPECT_EQ(partition_for_key(Partitioner::crc32, b(v.key), 4), v.p4) << v.key;
  }
  EXPECT_EQ(partition_for_key(Partitioner::crc32, b("abc"), 1), 0);
}

}  // namespace
}  // namespace strata::pkindex
