#include "tools/dump/report_json.h"

#include <charconv>

#include "protocol/codec/compression.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/batch_format.h"

namespace strata::dump {
namespace bf = protocol::batch_format;

namespace {
std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

ojson batch_json(const BatchInfo& b) {
  ojson j;
  j["base_offset"] = b.base_offset;
  j["last_offset"] = b.last_offset();
  j["count"] = b.record_count;
  j["position"] = b.position;
  j["size"] = b.size;
  j["magic"] = b.magic;
  j["crc"] = hex32(b.crc_stored);
  j["crc_computed"] = hex32(b.crc_computed);
  j["crc_status"] = b.crc_ok() ? "ok" : "CORRUPT";
  j["valid"] = b.valid();
  j["codec"] = std::string(codec::compression_name(
      static_cast<codec::Compression>(b.attributes & bf::kCompressionMask)));
  j["timestamp_type"] = (b.attributes & bf::kTimestampTypeBit) ? "LogAppendTime" : "CreateTime";
  j["transactional"] = (b.attributes & bf::kTransactionalBit) != 0;
  j["control"] = (b.attributes & bf::kControlBit) != 0;
  if (b.attributes & bf::kDeleteHorizonBit) j["delete_horizon"] = true;
  j["producer_id"] = b.producer_id;
  j["producer_epoch"] = b.producer_epoch;
  j["base_sequence"] = b.base_sequence;
  j["partition_leader_epoch"] = b.partition_leader_epoch;
  j["base_timestamp"] = b.base_timestamp;
  j["max_timestamp"] = b.max_timestamp;
  return j;
}

ojson record_json(const DecodedRecord& r, size_t max_bytes) {
  ojson j;
  j["offset"] = r.offset;
  j["timestamp"] = r.timestamp;
  bytes_field(j, "key", r.record->key, max_bytes);
  bytes_field(j, "value", r.record->value, max_bytes);
  if (r.change) j["change"] = std::string(*r.change);
  if (r.before) bytes_field(j, "before", *r.before, max_bytes);
  ojson headers = ojson::array();
  auto it = r.record->headers();
  protocol::Header h;
  while (it.next(h)) {
    ojson hj;
    hj["key"] = std::string(h.key);
    bytes_field(hj, "value", h.value, max_bytes);
    if (h.key == protocol::pk::kAppendTimeHeader && h.value && h.value->size() == 8) {
      int64_t v = 0;
      for (uint8_t c : *h.value) v = static_cast<int64_t>((static_cast<uint64_t>(v) << 8) | c);
      hj["value_int64"] = v;
    }
    headers.push_back(std::move(hj));
  }
  j["headers"] = std::move(headers);
  return j;
}

ojson problem_json(const Problem& p) {
  ojson j;
  j["kind"] = problem_kind_name(p.kind);
  j["position"] = p.position;
  j["end"] = p.end;
  if (p.base_offset >= 0) j["base_offset"] = p.base_offset;
  j["detail"] = p.detail;
  return j;
}

ojson summary_json(const ScanSummary& s) {
  ojson j;
  j["file_size"] = s.file_size;
  j["scanned_bytes"] = s.scanned_bytes;
  j["batches"] = s.batches;
  j["valid_batches"] = s.valid_batches;
  j["records"] = s.records;
  j["first_offset"] = s.first_offset;
  j["last_offset"] = s.last_offset;
  j["max_timestamp"] = s.max_timestamp;
  j["problems"] = s.problems;
  return j;
}

ojson kv_json(const KvReport& r, size_t max_bytes) {
  ojson j;
  j["path"] = r.path;
  j["applied_offset"] = r.applied_offset ? ojson(*r.applied_offset) : ojson(nullptr);
  j["rows"] = r.rows;
  j["malformed_rows"] = r.malformed_rows;
  j["rows_after_applied"] = r.rows_after_applied;
  j["other_keys"] = r.other_keys;
  j["max_row_offset"] = r.max_row_offset;
  j["estimated_keys"] = r.estimated_keys;
  j["key_bytes"] = r.key_bytes;
  j["value_bytes"] = r.value_bytes;
  j["sst_files"] = r.sst_files;
  j["sst_bytes"] = r.sst_bytes;
  j["total_bytes"] = r.total_bytes;
  j["column_families"] = r.column_families;
  if (!r.first_rows.empty()) {
    ojson rows = ojson::array();
    for (const auto& s : r.first_rows) {
      ojson rj;
      bytes_field(rj, "key", as_bytes(s.key), max_bytes);
      if (s.malformed) {
        rj["malformed"] = true;
        bytes_field(rj, "raw", as_bytes(s.value), max_bytes);
      } else {
        rj["offset"] = s.offset;
        rj["timestamp"] = s.timestamp;
        if (s.version) rj["version"] = *s.version;
        if (s.append_time) rj["append_time"] = *s.append_time;
        bytes_field(rj, "value", as_bytes(s.value), max_bytes);
      }
      rows.push_back(std::move(rj));
    }
    j["first_rows"] = std::move(rows);
  }
  j["problems"] = r.problems;
  return j;
}

std::optional<int64_t> parse_offset_file_name(std::string_view name, std::string_view suffix) {
  if (name.size() != 20 + suffix.size() || !name.ends_with(suffix)) return std::nullopt;
  int64_t v = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + 20, v);
  if (ec != std::errc() || p != name.data() + 20 || v < 0) return std::nullopt;
  return v;
}

}  // namespace strata::dump
