// Byte layouts of the RocksDB keys and values of a primary-key partition (one RocksDB per
// partition, one column family):
//   row key    = 'r' + primary key bytes
//   meta key   = "m.applied" -> int64 BE: the last log offset whose effect the rows include
//   meta key   = "m.txn-floor" -> int64 BE: first offset of the oldest open transaction (if any)
//   row value  = u8 format (1) | u8 flags (bit 0: has version, bit 1: has append time) | int64 BE
//                offset of the last change | int64 BE timestamp of the last change | [int64 BE
//                version] | [int64 BE broker append time, ms: the TTL clock] | row bytes
//                (rows written before TTL existed have neither flag and stay readable)
// With table.history.enabled, every change is kept too (pk_history.cc):
//   history key   = 'h' + u32 BE key length + primary key bytes + int64 BE offset of the change
//                   (the length keeps one key's changes contiguous and apart from longer keys')
//   history value = the row value as above (a put), or 'D' + int64 BE timestamp (a delete)
//   meta key      = "m.hist-horizon" -> int64 BE: changes below it were trimmed to each key's
//                   newest; "m.hist-watermark" -> int64 BE: the newest timestamp among them
// The offset sits at a fixed position so a row encoded before its offset is known (compute) can be
// patched at apply time. Owned by pkindex. Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace strata::pkindex::row_format {

inline constexpr char kRowPrefix = 'r';
inline constexpr std::string_view kAppliedKey = "m.applied";
// int64 BE: the first offset of the oldest transaction open at the applied offset (absent: none);
// replay starts at min(it, applied + 1).
inline constexpr std::string_view kTxnFloorKey = "m.txn-floor";
inline constexpr char kHistoryPrefix = 'h';
inline constexpr std::string_view kHistoryHorizonKey = "m.hist-horizon";
inline constexpr std::string_view kHistoryWatermarkKey = "m.hist-watermark";
inline constexpr uint8_t kHistoryDelete = 'D';
inline constexpr uint8_t kFormat = 1;
inline constexpr uint8_t kHasVersion = 1;
inline constexpr uint8_t kHasAppendTime = 2;
inline constexpr size_t kOffsetPos = 2;
inline constexpr size_t kFixedSize = 18;  // format, flags, offset, timestamp

struct RowView {
  int64_t offset = -1;
  int64_t timestamp = -1;
  std::optional<int64_t> version;
  std::optional<int64_t> append_time;  // broker append time (ms), written when the table has a TTL
  std::span<const uint8_t> value;
  // The row's TTL clock: the broker append time when stored, else the record timestamp.
  int64_t ttl_clock() const { return append_time ? *append_time : timestamp; }
};

void append_row_key(std::string& out, std::span<const uint8_t> key);
void encode_row(std::string& out, int64_t offset, int64_t timestamp, std::optional<int64_t> version,
                std::span<const uint8_t> value, std::optional<int64_t> append_time = std::nullopt);
void patch_offset(std::string& encoded, int64_t offset);
// 'h' + u32 BE length + key: every history key of `key` starts with it.
void append_history_prefix(std::string& out, std::span<const uint8_t> key);
// nullopt on a value that is not a well-formed row.
std::optional<RowView> decode_row(std::span<const uint8_t> encoded);

void put_be64(uint8_t* p, int64_t v);
int64_t get_be64(const uint8_t* p);

}  // namespace strata::pkindex::row_format
