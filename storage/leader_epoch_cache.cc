// Leader epoch history and its checkpoint file (see leader_epoch_cache.h).
#include "storage/leader_epoch_cache.h"

#include <sstream>

#include "storage/file_util.h"

namespace strata::storage {

Result<LeaderEpochCache> LeaderEpochCache::load(Env* env, std::string path) {
  LeaderEpochCache cache;
  cache.env_ = env;
  cache.path_ = std::move(path);
  auto text = read_file_to_string(env, cache.path_);
  if (!text.ok()) {
    if (text.status().code() == Errc::not_found) return cache;
    return text.status();
  }
  std::istringstream in(*text);
  int version = -1;
  long long count = -1;
  if (!(in >> version >> count) || version != 0 || count < 0) {
    return Status(Errc::corruption, "malformed " + cache.path_);
  }
  for (long long i = 0; i < count; ++i) {
    long long epoch = 0, offset = 0;
    if (!(in >> epoch >> offset) || epoch < 0 || offset < 0 ||
        (!cache.entries_.empty() &&
         (epoch <= cache.entries_.back().epoch || offset < cache.entries_.back().start_offset))) {
      return Status(Errc::corruption, "malformed entry in " + cache.path_);
    }
    cache.entries_.push_back({static_cast<int32_t>(epoch), offset});
  }
  return cache;
}

Status LeaderEpochCache::write() const {
  std::string text = "0\n" + std::to_string(entries_.size()) + "\n";
  for (const auto& e : entries_) {
    text += std::to_string(e.epoch) + " " + std::to_string(e.start_offset) + "\n";
  }
  return write_file_atomically(env_, path_, text);
}

Status LeaderEpochCache::assign(int32_t epoch, int64_t start_offset) {
  while (!entries_.empty() &&
         (entries_.back().epoch >= epoch || entries_.back().start_offset >= start_offset)) {
    entries_.pop_back();
  }
  entries_.push_back({epoch, start_offset});
  return write();
}

Status LeaderEpochCache::truncate_from_end(int64_t end_offset) {
  bool changed = false;
  while (!entries_.empty() && entries_.back().start_offset >= end_offset) {
    entries_.pop_back();
    changed = true;
  }
  return changed ? write() : Status::Ok();
}

std::optional<int32_t> LeaderEpochCache::epoch_for_offset(int64_t offset) const {
  std::optional<int32_t> out;
  for (const auto& e : entries_) {
    if (e.start_offset > offset) break;
    out = e.epoch;
  }
  return out;
}

std::pair<int32_t, int64_t> LeaderEpochCache::end_offset_for_epoch(int32_t epoch,
                                                                   int64_t log_end_offset) const {
  if (epoch < 0 || entries_.empty()) return {-1, -1};
  if (epoch == latest_epoch()) return {epoch, log_end_offset};
  const Entry* floor = nullptr;
  const Entry* higher = nullptr;
  for (const auto& e : entries_) {
    if (e.epoch <= epoch) {
      floor = &e;
    } else {
      higher = &e;
      break;
    }
  }
  if (higher == nullptr) return {-1, -1};
  if (floor == nullptr) return {epoch, higher->start_offset};
  return {floor->epoch, higher->start_offset};
}

}  // namespace strata::storage
