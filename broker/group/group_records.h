// The records of the consumer-offsets topic (`__consumer_offsets`), which is where the group
// coordinator keeps its durable state: a key per group and per committed offset, the newest record
// of a key wins (the topic is compacted), and a record with a null value (a tombstone) deletes.
// The same bytes were the keys and values of the RocksDB store of earlier versions, which is what
// makes its migration a plain copy (legacy_group_store.h).
//
// Key layout (integers big-endian):
//   'g' <group bytes>                                                   -> group record
//   'o' <u16 group len> <group> <u16 topic len> <topic> <i32 partition> -> offset record
// Offset record: u8 version(=1) i64 offset, i32 leader epoch, i64 commit ms, i64 expire ms,
//                u32 metadata len, metadata bytes.
// Group record:  u8 version(=1), i32 generation, opt-string protocol type, opt-string protocol
//                name, opt-string leader, i64 empty-since ms, u32 member count, then per member:
//                string id, opt-string instance id, string client id, string client host,
//                i32 session timeout, i32 rebalance timeout, string protocol type,
//                u32 protocol count x (string name, bytes metadata), bytes assignment.
//                (string/bytes = u32 length + data; opt-string = u8 present + string)
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "broker/group/group.h"
#include "protocol/base/result.h"

namespace strata::broker::group {

struct OffsetKey {
  std::string group;
  std::string topic;
  int32_t partition = 0;
};

namespace records {

std::string group_key(std::string_view group);
std::string offset_key(const OffsetKey& k);
std::string encode_group(const Group& g);
std::string encode_offset(const OffsetEntry& e);
bool decode_group(std::string_view data, Group& g);
bool decode_offset(std::string_view data, OffsetEntry& e);
bool decode_offset_key(std::string_view key, OffsetKey& out);

// The group a record key belongs to; nullopt for a key of neither kind.
std::optional<std::string> group_of(std::string_view key);

// Folds one record into `groups` (loading a partition, migrating a store): a group record
// replaces the group's membership and keeps its offsets; an offset record sets one offset; a
// group tombstone removes the group with its offsets; an offset tombstone removes one offset.
// Loaded groups are Empty or Stable, without timers. corruption on a record it cannot read.
Status apply(std::map<std::string, Group>& groups, std::string_view key,
             std::optional<std::string_view> value);

}  // namespace records

// Kafka's rule for the consumer-offsets partition that holds a group:
// abs(javaStringHashCode(group)) % partitions, the hash taken over the id's UTF-16 code units as
// Java's String.hashCode does (ids are UTF-8 on the wire; invalid bytes count as U+FFFD, as Java's
// decoder replaces them), and abs(INT_MIN) = 0 as Kafka's Utils.abs.
int32_t java_string_hash(std::string_view utf8);
int32_t partition_for_group(std::string_view group, int32_t partitions);

}  // namespace strata::broker::group
