// On-disk names (see file_names.h).
#include "storage/file_names.h"

#include <charconv>
#include <cstdio>

#include "storage/file_util.h"

namespace strata::storage {

std::string offset_file_stem(int64_t base_offset) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%020lld", static_cast<long long>(base_offset));
  return buf;
}

std::string segment_log_path(const std::string& dir, int64_t base_offset) {
  return join_path(dir, offset_file_stem(base_offset) + std::string(kLogSuffix));
}
std::string segment_index_path(const std::string& dir, int64_t base_offset) {
  return join_path(dir, offset_file_stem(base_offset) + std::string(kIndexSuffix));
}
std::string segment_time_index_path(const std::string& dir, int64_t base_offset) {
  return join_path(dir, offset_file_stem(base_offset) + std::string(kTimeIndexSuffix));
}

std::string segment_txn_index_path(const std::string& dir, int64_t base_offset) {
  return join_path(dir, offset_file_stem(base_offset) + std::string(kTxnIndexSuffix));
}
std::string segment_summary_path(const std::string& dir, int64_t base_offset) {
  return join_path(dir, offset_file_stem(base_offset) + std::string(kSummarySuffix));
}

std::optional<int64_t> parse_segment_log_name(std::string_view name) {
  if (name.size() != 20 + kLogSuffix.size() || !name.ends_with(kLogSuffix)) return std::nullopt;
  int64_t v = 0;
  auto stem = name.substr(0, 20);
  auto [p, ec] = std::from_chars(stem.data(), stem.data() + stem.size(), v);
  if (ec != std::errc() || p != stem.data() + stem.size() || v < 0) return std::nullopt;
  return v;
}

std::string partition_dir_name(std::string_view topic, int32_t partition) {
  return std::string(topic) + "-" + std::to_string(partition);
}

std::optional<TopicPartitionName> parse_partition_dir_name(std::string_view name) {
  size_t dash = name.find_last_of('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == name.size()) return std::nullopt;
  auto digits = name.substr(dash + 1);
  int32_t p = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p);
  if (ec != std::errc() || end != digits.data() + digits.size() || p < 0) return std::nullopt;
  if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
  return TopicPartitionName{std::string(name.substr(0, dash)), p};
}

}  // namespace strata::storage
