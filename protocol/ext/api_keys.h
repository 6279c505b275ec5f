// The extension APIs of primary-key tables (keys 16000-16099; bodies in protocol/ext/*.proto,
// framed like Kafka requests with request header v2 and response header v1). This table is the one
// list of their keys, names and served versions: the broker's dispatch and ApiVersions, metrics
// labels, the header-version rules and the client library read it. Constants only; any thread.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace strata::protocol::ext {

inline constexpr int16_t kFirstKey = 16000;  // the reserved range [kFirstKey, kLastKey]
inline constexpr int16_t kLastKey = 16099;

inline constexpr int16_t kLookup = 16000;
inline constexpr int16_t kPrefixLookup = 16001;
inline constexpr int16_t kScan = 16002;
inline constexpr int16_t kReadChangelog = 16003;
inline constexpr int16_t kDescribeTable = 16004;
inline constexpr int16_t kReplicaCheckpoint = 16005;  // broker to broker: a new PK replica
inline constexpr int16_t kEndTxnOffsets = 16006;      // broker to broker: a transaction's offsets
inline constexpr int16_t kLookupAsOf = 16007;
inline constexpr int16_t kReadLog = 16008;  // records of a log topic, filterable

struct ApiInfo {
  int16_t key;
  std::string_view name;
  int16_t min_version;
  int16_t max_version;
};

inline constexpr std::array<ApiInfo, 9> kApis{{
    {kLookup, "Lookup", 0, 0},
    {kPrefixLookup, "PrefixLookup", 0, 0},
    {kScan, "Scan", 0, 0},
    {kReadChangelog, "ReadChangelog", 0, 0},
    {kDescribeTable, "DescribeTable", 0, 0},
    {kReplicaCheckpoint, "ReplicaCheckpoint", 0, 0},
    {kEndTxnOffsets, "EndTxnOffsets", 0, 0},
    {kLookupAsOf, "LookupAsOf", 0, 0},
    {kReadLog, "ReadLog", 0, 0},
}};

constexpr bool is_extension_key(int16_t key) { return key >= kFirstKey && key <= kLastKey; }

// The table entry of `key`, or nullptr.
constexpr const ApiInfo* find_api(int16_t key) {
  for (const ApiInfo& a : kApis) {
    if (a.key == key) return &a;
  }
  return nullptr;
}

}  // namespace strata::protocol::ext
