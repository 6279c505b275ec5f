// Segment swap protocol and its recovery (see segment_swap.h).
#include "storage/cleaner/segment_swap.h"

#include <set>
#include <string_view>

#include "storage/cleaner/cleaned_segment.h"
#include "storage/file_names.h"
#include "storage/file_util.h"

namespace strata::storage::cleaner {
namespace {

Status remove_if_exists(Env* env, const std::string& path) {
  Status st = env->remove_file(path);
  if (!st.ok() && st.code() != Errc::not_found) return st;
  return Status::Ok();
}

// "<20 digits><suffix>" -> base offset.
std::optional<int64_t> parse_with_suffix(std::string_view name, std::string_view suffix) {
  if (!name.ends_with(suffix)) return std::nullopt;
  name.remove_suffix(suffix.size());
  if (name.ends_with(kLogSuffix)) {
    return parse_segment_log_name(name);
  }
  return std::nullopt;
}

std::string with(const std::string& path, std::string_view suffix) {
  return path + std::string(suffix);
}

}  // namespace

Status swap_in_cleaned_segment(Env* env, const std::string& dir, int64_t base) {
  const std::string log = segment_log_path(dir, base);
  const std::string index = segment_index_path(dir, base);
  const std::string time_index = segment_time_index_path(dir, base);
  STRATA_RETURN_IF_ERROR(env->rename_file(with(index, kCleanedSuffix), with(index, kSwapSuffix)));
  STRATA_RETURN_IF_ERROR(
      env->rename_file(with(time_index, kCleanedSuffix), with(time_index, kSwapSuffix)));
  STRATA_RETURN_IF_ERROR(env->sync_dir(dir));
  STRATA_RETURN_IF_ERROR(env->rename_file(with(log, kCleanedSuffix), with(log, kSwapSuffix)));
  STRATA_RETURN_IF_ERROR(env->sync_dir(dir));  // committed
  STRATA_RETURN_IF_ERROR(env->rename_file(with(index, kSwapSuffix), index));
  STRATA_RETURN_IF_ERROR(env->rename_file(with(time_index, kSwapSuffix), time_index));
  STRATA_RETURN_IF_ERROR(env->rename_file(with(log, kSwapSuffix), log));
  // The batch summaries follow the segment they describe; an entry that does not match its
  // batch is never used (batch_summary.h), so this needs no place in the commit protocol.
  const std::string stats = segment_summary_path(dir, base);
  if (env->file_exists(with(stats, kCleanedSuffix))) {
    STRATA_RETURN_IF_ERROR(env->rename_file(with(stats, kCleanedSuffix), stats));
  } else if (env->file_exists(stats)) {
    STRATA_RETURN_IF_ERROR(env->remove_file(stats));
  }
  return env->sync_dir(dir);
}

Status recover_segment_swaps(Env* env, const std::string& dir) {
  auto names = env->list_dir(dir);
  if (!names.ok()) return names.status();
  bool changed = false;
  std::set<int64_t> logs;
  for (const auto& n : *names) {
    if (auto b = parse_segment_log_name(n)) logs.insert(*b);
  }
  // 1. Uncommitted output and committed swaps.
  for (const auto& n : *names) {
    const std::string path = join_path(dir, n);
    if (n.ends_with(kCleanedSuffix) || n.ends_with(".deleted")) {
      STRATA_RETURN_IF_ERROR(remove_if_exists(env, path));
      changed = true;
      continue;
    }
    auto base = parse_with_suffix(n, kSwapSuffix);
    if (!base) continue;
    for (const auto& idx : {segment_index_path(dir, *base), segment_time_index_path(dir, *base)}) {
      if (env->file_exists(with(idx, kSwapSuffix))) {
        STRATA_RETURN_IF_ERROR(env->rename_file(with(idx, kSwapSuffix), idx));
      } else {
        STRATA_RETURN_IF_ERROR(remove_if_exists(env, idx));  // may be stale: rebuilt at open
      }
    }
    STRATA_RETURN_IF_ERROR(env->rename_file(path, segment_log_path(dir, *base)));
    logs.insert(*base);
    changed = true;
  }
  // 2. Leftover index .swap files of an uncommitted swap, and index files without a .log.
  auto again = env->list_dir(dir);
  if (!again.ok()) return again.status();
  for (const auto& n : *again) {
    const std::string path = join_path(dir, n);
    if (n.ends_with(kSwapSuffix)) {
      STRATA_RETURN_IF_ERROR(remove_if_exists(env, path));
      changed = true;
      continue;
    }
    for (std::string_view suffix : {kIndexSuffix, kTimeIndexSuffix, kSummarySuffix}) {
      if (n.size() != 20 + suffix.size() || !n.ends_with(suffix)) continue;
      auto base = parse_segment_log_name(n.substr(0, 20) + std::string(kLogSuffix));
      if (base && !logs.count(*base)) {
        STRATA_RETURN_IF_ERROR(remove_if_exists(env, path));
        changed = true;
      }
    }
  }
  return changed ? env->sync_dir(dir) : Status::Ok();
}

}  // namespace strata::storage::cleaner
