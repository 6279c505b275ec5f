#include "tools/dump/index_check.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>

namespace strata::dump {
namespace {

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
int64_t be64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}

Problem index_problem(uint64_t pos, uint64_t size, std::string detail) {
  return Problem{ProblemKind::index, pos, pos + size, -1, std::move(detail)};
}

void check_trailing(size_t total, size_t entry, std::vector<Problem>& problems) {
  if (total % entry != 0) {
    size_t whole = total - total % entry;
    problems.push_back(index_problem(whole, total % entry,
                                     std::to_string(total % entry) + " trailing bytes after " +
                                         std::to_string(whole / entry) + " whole " +
                                         std::to_string(entry) + "-byte entries"));
  }
}

std::string entry_name(size_t i) { return "entry " + std::to_string(i) + ": "; }

// base + rel; when that overflows (a crafted file name such as 09223372036854775807.index) the
// entry is reported as offset_out_of_range and its offset saturates.
int64_t offset_of(int64_t base, int32_t rel, size_t pos, size_t entry,
                  std::vector<Problem>& problems) {
  int64_t out = 0;
  if (!__builtin_add_overflow(base, int64_t{rel}, &out)) return out;
  problems.push_back(Problem{ProblemKind::offset_out_of_range, pos, pos + entry, base,
                             entry_name(pos / entry) + "base offset " + std::to_string(base) +
                                 " + relative offset " + std::to_string(rel) + " overflows int64"});
  return rel < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

}  // namespace

std::vector<OffsetIndexEntry> parse_offset_index(std::span<const uint8_t> bytes, int64_t base,
                                                 std::vector<Problem>& problems) {
  constexpr size_t kEntry = 8;
  std::vector<OffsetIndexEntry> out;
  check_trailing(bytes.size(), kEntry, problems);
  for (size_t i = 0; i + kEntry <= bytes.size(); i += kEntry) {
    int32_t rel = static_cast<int32_t>(be32(&bytes[i]));
    uint32_t position = be32(&bytes[i + 4]);
    size_t n = out.size();
    if (rel < 0) {
      problems.push_back(index_problem(
          i, kEntry, entry_name(n) + "negative relative offset " + std::to_string(rel)));
    }
    OffsetIndexEntry e{offset_of(base, rel, i, kEntry, problems), position};
    if (!out.empty()) {
      if (e.offset <= out.back().offset) {
        problems.push_back(index_problem(i, kEntry,
                                         entry_name(n) + "offset " + std::to_string(e.offset) +
                                             " is not above the previous entry's " +
                                             std::to_string(out.back().offset)));
      }
      if (e.position <= out.back().position) {
        problems.push_back(index_problem(i, kEntry,
                                         entry_name(n) + "position " + std::to_string(e.position) +
                                             " is not above the previous entry's " +
                                             std::to_string(out.back().position)));
      }
    }
    out.push_back(e);
  }
  return out;
}

std::vector<TimeIndexEntry> parse_time_index(std::span<const uint8_t> bytes, int64_t base,
                                             std::vector<Problem>& problems) {
  constexpr size_t kEntry = 12;
  std::vector<TimeIndexEntry> out;
  check_trailing(bytes.size(), kEntry, problems);
  for (size_t i = 0; i + kEntry <= bytes.size(); i += kEntry) {
    int64_t ts = be64(&bytes[i]);
    int32_t rel = static_cast<int32_t>(be32(&bytes[i + 8]));
    size_t n = out.size();
    if (rel < 0) {
      problems.push_back(index_problem(
          i, kEntry, entry_name(n) + "negative relative offset " + std::to_string(rel)));
    }
    TimeIndexEntry e{ts, offset_of(base, rel, i, kEntry, problems)};
    if (!out.empty()) {
      if (e.timestamp <= out.back().timestamp) {
        problems.push_back(index_problem(
            i, kEntry,
            entry_name(n) + "timestamp " + std::to_string(e.timestamp) +
                " is not above the previous entry's " + std::to_string(out.back().timestamp)));
      }
      if (e.offset < out.back().offset) {
        problems.push_back(index_problem(i, kEntry,
                                         entry_name(n) + "offset " + std::to_string(e.offset) +
                                             " is below the previous entry's " +
                                             std::to_string(out.back().offset)));
      }
    }
    out.push_back(e);
  }
  return out;
}

namespace {

// (key, entry index) sorted by key, for lookups from the batches' side.
template <typename Key>
std::vector<std::pair<Key, size_t>> sorted_keys(size_t n, const std::function<Key(size_t)>& key) {
  std::vector<std::pair<Key, size_t>> v;
  v.reserve(n);
  for (size_t i = 0; i < n; ++i) v.emplace_back(key(i), i);
  std::sort(v.begin(), v.end());
  return v;
}

template <typename Key, typename Fn>
void for_each_match(const std::vector<std::pair<Key, size_t>>& v, Key k, Fn fn) {
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(k, size_t{0}));
  for (; it != v.end() && it->first == k; ++it) fn(it->second);
}

}  // namespace

OffsetIndexVerifier::OffsetIndexVerifier(const std::vector<OffsetIndexEntry>& entries)
    : entries_(entries),
      by_position_(sorted_keys<uint64_t>(entries.size(),
                                         [&](size_t i) { return uint64_t{entries[i].position}; })),
      matched_(entries.size(), false),
      detail_(entries.size()) {}

void OffsetIndexVerifier::on_batch(const BatchInfo& b) {
  for_each_match(by_position_, b.position, [&](size_t i) {
    matched_[i] = true;
    const auto& e = entries_[i];
    if (!b.valid()) {
      detail_[i] = "points at the corrupt batch at " + std::to_string(e.position);
    } else if (b.last_offset() != e.offset) {
      detail_[i] = "offset " + std::to_string(e.offset) + " but the batch at position " +
                   std::to_string(e.position) + " has offsets " + std::to_string(b.base_offset) +
                   ".." + std::to_string(b.last_offset());
    }
  });
}

void OffsetIndexVerifier::finish(uint64_t log_size, std::vector<Problem>& problems) const {
  constexpr size_t kEntry = 8;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    std::string detail = detail_[i];
    if (!matched_[i]) {
      detail = e.position >= log_size
                   ? "position " + std::to_string(e.position) + " is past the end of the .log (" +
                         std::to_string(log_size) + " bytes)"
                   : "position " + std::to_string(e.position) +
                         " is not the start of a batch in the .log";
    }
    if (!detail.empty())
      problems.push_back(index_problem(i * kEntry, kEntry, entry_name(i) + detail));
  }
}

TimeIndexVerifier::TimeIndexVerifier(const std::vector<TimeIndexEntry>& entries)
    : entries_(entries),
      by_offset_(sorted_keys<int64_t>(entries.size(), [&](size_t i) { return entries[i].offset; })),
      matched_(entries.size(), false),
      detail_(entries.size()) {}

void TimeIndexVerifier::on_batch(const BatchInfo& b) {
  if (!b.valid()) return;
  running_max_ = std::max(running_max_, b.max_timestamp);
  for_each_match(by_offset_, b.last_offset(), [&](size_t i) {
    if (matched_[i]) return;  // the first batch ending there decides
    matched_[i] = true;
    const auto& e = entries_[i];
    if (running_max_ != e.timestamp) {
      detail_[i] = "timestamp " + std::to_string(e.timestamp) +
                   " but the max timestamp of the batches up to offset " +
                   std::to_string(e.offset) + " is " + std::to_string(running_max_);
    }
  });
}

void TimeIndexVerifier::finish(std::vector<Problem>& problems) const {
  constexpr size_t kEntry = 12;
  for (size_t i = 0; i < entries_.size(); ++i) {
    std::string detail = detail_[i];
    if (!matched_[i]) {
      detail =
          "offset " + std::to_string(entries_[i].offset) + " is not the last offset of a batch";
    }
    if (!detail.empty())
      problems.push_back(index_problem(i * kEntry, kEntry, entry_name(i) + detail));
  }
}

void verify_offset_index(const std::vector<OffsetIndexEntry>& entries,
                         const std::vector<BatchInfo>& batches, uint64_t log_size,
                         std::vector<Problem>& problems) {
  OffsetIndexVerifier v(entries);
  for (const auto& b : batches) v.on_batch(b);
  v.finish(log_size, problems);
}

void verify_time_index(const std::vector<TimeIndexEntry>& entries,
                       const std::vector<BatchInfo>& batches, std::vector<Problem>& problems) {
  TimeIndexVerifier v(entries);
  for (const auto& b : batches) v.on_batch(b);
  v.finish(problems);
}

}  // namespace strata::dump
