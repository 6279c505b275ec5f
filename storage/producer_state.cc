// ProducerStateTable and its snapshot files (see producer_state.h).
#include "storage/producer_state.h"

#include <algorithm>
#include <limits>

#include "protocol/record/byte_order.h"
#include "protocol/record/crc32c.h"
#include "storage/file_names.h"
#include "storage/file_util.h"

namespace strata::storage {
namespace {

constexpr std::string_view kSnapshotSuffix = ".snapshot";
constexpr std::string_view kSnapshotMagic = "SPS3";
// Before coordinator epochs: no coordinator_epoch per producer. Still read (-1).
constexpr std::string_view kSnapshotMagicV2 = "SPS2";
// Before transactions: no txn_first_offset per producer. Still read (nothing was open then).
constexpr std::string_view kSnapshotMagicV1 = "SPS1";
constexpr size_t kSnapshotHeader = 4 + 4 + 8 + 4;  // magic, crc, offset, count
constexpr size_t kEntryHeader = 8 + 2 + 8 + 1;
constexpr size_t kBatchSize = 4 + 4 + 8 + 8 + 8;

bool in_sequence(int32_t last_seq, int32_t next_seq) {
  return static_cast<int64_t>(next_seq) == static_cast<int64_t>(last_seq) + 1 ||
         (next_seq == 0 && last_seq == std::numeric_limits<int32_t>::max());
}

template <typename T>
void put(std::string& out, T v) {
  uint8_t buf[sizeof(T)];
  protocol::detail::store_be<T>(buf, v);
  out.append(reinterpret_cast<const char*>(buf), sizeof(T));
}

template <typename T>
T get(const uint8_t*& p) {
  T v = protocol::detail::load_be<T>(p);
  p += sizeof(T);
  return v;
}

std::optional<int64_t> parse_snapshot_name(std::string_view name) {
  if (name.size() != 20 + kSnapshotSuffix.size() || !name.ends_with(kSnapshotSuffix)) {
    return std::nullopt;
  }
  int64_t v = 0;
  for (size_t i = 0; i < 20; ++i) {
    if (name[i] < '0' || name[i] > '9') return std::nullopt;
    if (v > (std::numeric_limits<int64_t>::max() - (name[i] - '0')) / 10) return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace

int32_t ProducerBatch::last_seq() const {
  if (first_seq < 0) return first_seq;
  const int64_t last = static_cast<int64_t>(first_seq) + last_offset_delta;
  const int64_t max = std::numeric_limits<int32_t>::max();
  return static_cast<int32_t>(last > max ? last - max - 1 : last);
}

void ProducerEntry::add(const ProducerBatchMeta& b) {
  if (count == kProducerBatchesToRetain) {
    ring[head] = b;
    head = static_cast<uint8_t>((head + 1) % kProducerBatchesToRetain);
  } else {
    ring[(head + count) % kProducerBatchesToRetain] = b;
    ++count;
  }
}

ProducerCheckResult ProducerStateTable::check(const ProducerBatch& b) const {
  ProducerCheckResult r;
  if (!b.has_producer()) return r;
  auto it = producers_.find(b.producer_id);
  if (it == producers_.end()) return r;  // unknown producer: any sequence (Kafka 2.5+)
  const ProducerEntry& e = it->second;

  // A retry of a retained batch (checked first, as Kafka does before validating).
  if (b.epoch == e.epoch) {
    const int32_t last_seq = b.last_seq();
    for (int i = 0; i < e.count; ++i) {
      const ProducerBatchMeta& m = e.batch(i);
      if (m.first_seq == b.first_seq && m.last_seq == last_seq) {
        r.kind = ProducerCheck::duplicate;
        r.dup_first_offset = m.first_offset;
        r.dup_last_offset = m.last_offset;
        r.dup_timestamp = m.timestamp;
        return r;
      }
    }
  }
  if (b.epoch < e.epoch) {
    r.kind = ProducerCheck::stale_epoch;
    r.message = "producer " + std::to_string(b.producer_id) + " epoch " + std::to_string(b.epoch) +
                " is older than the current epoch " + std::to_string(e.epoch);
    return r;
  }
  if (b.epoch != e.epoch) {
    if (b.first_seq != 0 && e.epoch != -1) {
      r.kind = ProducerCheck::out_of_order;
      r.message = "producer " + std::to_string(b.producer_id) + " new epoch " +
                  std::to_string(b.epoch) + " must start at sequence 0, got " +
                  std::to_string(b.first_seq);
    }
    return r;
  }
  const ProducerBatchMeta* last = e.last();
  if (e.epoch != -1 && last != nullptr && !in_sequence(last->last_seq, b.first_seq)) {
    r.kind = ProducerCheck::out_of_order;
    r.message = "producer " + std::to_string(b.producer_id) + " sequence " +
                std::to_string(b.first_seq) + " does not follow " + std::to_string(last->last_seq);
  }
  return r;
}

void ProducerStateTable::set_txn_first_offset(ProducerEntry& e, int64_t offset) {
  if (e.txn_first_offset >= 0) open_txns_.erase({e.txn_first_offset, e.producer_id});
  e.txn_first_offset = offset;
  if (offset >= 0) open_txns_.insert({offset, e.producer_id});
}

std::optional<int64_t> ProducerStateTable::first_open_txn_offset() const {
  if (open_txns_.empty()) return std::nullopt;
  return open_txns_.begin()->first;
}

ProducerCheckResult ProducerStateTable::check_marker(int64_t producer_id, int16_t epoch,
                                                     int32_t coordinator_epoch) const {
  ProducerCheckResult r;
  const ProducerEntry* e = find(producer_id);
  if (e != nullptr && epoch < e->epoch) {
    r.kind = ProducerCheck::stale_epoch;
    r.message = "marker for producer " + std::to_string(producer_id) + " epoch " +
                std::to_string(epoch) + " is older than the current epoch " +
                std::to_string(e->epoch);
  } else if (e != nullptr && coordinator_epoch < e->coordinator_epoch) {
    r.kind = ProducerCheck::fenced_coordinator;
    r.message = "marker for producer " + std::to_string(producer_id) + " from coordinator epoch " +
                std::to_string(coordinator_epoch) + ", older than " +
                std::to_string(e->coordinator_epoch) + " which wrote its last marker";
  }
  return r;
}

CompletedTxn ProducerStateTable::apply_marker(int64_t producer_id, int16_t epoch, int64_t offset,
                                              bool commit, int64_t timestamp,
                                              int32_t coordinator_epoch) {
  ProducerEntry& e = producers_[producer_id];
  e.producer_id = producer_id;
  e.coordinator_epoch = coordinator_epoch;
  if (e.epoch != epoch) {
    e.clear_batches();
    e.epoch = epoch;
  }
  e.last_timestamp = timestamp;
  CompletedTxn t;
  t.producer_id = producer_id;
  t.first_offset = e.txn_first_offset >= 0 ? e.txn_first_offset : offset;
  t.last_offset = offset;
  t.aborted = !commit;
  set_txn_first_offset(e, -1);
  // The other open transactions (this one is already out of the set).
  t.last_stable_offset = open_txns_.empty() ? offset + 1 : open_txns_.begin()->first;
  return t;
}

void ProducerStateTable::apply(const ProducerBatch& b, int64_t first_offset, bool transactional) {
  if (!b.has_producer()) return;
  ProducerEntry& e = producers_[b.producer_id];
  e.producer_id = b.producer_id;
  if (e.epoch != b.epoch) {
    e.clear_batches();
    e.epoch = b.epoch;
  }
  e.add(ProducerBatchMeta{b.first_seq, b.last_seq(), first_offset,
                          first_offset + b.last_offset_delta, b.max_timestamp});
  e.last_timestamp = b.max_timestamp;
  if (transactional && e.txn_first_offset < 0) set_txn_first_offset(e, first_offset);
}

size_t ProducerStateTable::expire(int64_t now_ms, int64_t expiration_ms) {
  size_t n = 0;
  for (auto it = producers_.begin(); it != producers_.end();) {
    // An open transaction holds the LSO back until its marker: never expire it (Kafka neither).
    if (it->second.txn_first_offset < 0 && now_ms - it->second.last_timestamp >= expiration_ms) {
      it = producers_.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

const ProducerEntry* ProducerStateTable::find(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

std::vector<ProducerEntry> ProducerStateTable::entries() const {
  std::vector<ProducerEntry> out;
  out.reserve(producers_.size());
  for (const auto& [id, e] : producers_) out.push_back(e);
  std::sort(out.begin(), out.end(), [](const ProducerEntry& a, const ProducerEntry& b) {
    return a.producer_id < b.producer_id;
  });
  return out;
}

std::string ProducerStateTable::encode_snapshot(int64_t offset) const {
  // Sorted by producer id so the bytes are deterministic.
  std::vector<const ProducerEntry*> entries;
  entries.reserve(producers_.size());
  for (const auto& [id, e] : producers_) entries.push_back(&e);
  std::sort(entries.begin(), entries.end(),
            [](auto* a, auto* b) { return a->producer_id < b->producer_id; });

  std::string out(kSnapshotMagic);
  put<uint32_t>(out, 0);  // crc, patched below
  put<int64_t>(out, offset);
  put<int32_t>(out, static_cast<int32_t>(entries.size()));
  for (const ProducerEntry* e : entries) {
    put<int64_t>(out, e->producer_id);
    put<int16_t>(out, e->epoch);
    put<int64_t>(out, e->last_timestamp);
    put<int64_t>(out, e->txn_first_offset);
    put<int32_t>(out, e->coordinator_epoch);
    put<int8_t>(out, static_cast<int8_t>(e->count));
    for (int i = 0; i < e->count; ++i) {
      const ProducerBatchMeta& m = e->batch(i);
      put<int32_t>(out, m.first_seq);
      put<int32_t>(out, m.last_seq);
      put<int64_t>(out, m.first_offset);
      put<int64_t>(out, m.last_offset);
      put<int64_t>(out, m.timestamp);
    }
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(out.data());
  const uint32_t crc = protocol::crc32c({bytes + 8, out.size() - 8});
  protocol::detail::store_be<uint32_t>(reinterpret_cast<uint8_t*>(out.data()) + 4, crc);
  return out;
}

Result<int64_t> ProducerStateTable::decode_snapshot(std::string_view bytes) {
  auto bad = [](const std::string& why) {
    return Result<int64_t>(Errc::corruption, "producer snapshot: " + why);
  };
  if (bytes.size() < kSnapshotHeader ||
      (bytes.substr(0, 4) != kSnapshotMagic && bytes.substr(0, 4) != kSnapshotMagicV2 &&
       bytes.substr(0, 4) != kSnapshotMagicV1)) {
    return bad("bad magic or too short");
  }
  const bool v1 = bytes.substr(0, 4) == kSnapshotMagicV1;
  const bool v3 = bytes.substr(0, 4) == kSnapshotMagic;
  const size_t entry_header = kEntryHeader + (v1 ? 0 : 8) + (v3 ? 4 : 0);
  const auto* begin = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* end = begin + bytes.size();
  const uint8_t* p = begin + 4;
  const uint32_t crc = get<uint32_t>(p);
  if (protocol::crc32c({begin + 8, bytes.size() - 8}) != crc) return bad("CRC mismatch");
  const int64_t offset = get<int64_t>(p);
  const int32_t count = get<int32_t>(p);
  if (count < 0) return bad("negative count");
  std::unordered_map<int64_t, ProducerEntry> producers;
  for (int32_t i = 0; i < count; ++i) {
    if (static_cast<size_t>(end - p) < entry_header) return bad("truncated entry");
    ProducerEntry e;
    e.producer_id = get<int64_t>(p);
    e.epoch = get<int16_t>(p);
    e.last_timestamp = get<int64_t>(p);
    if (!v1) e.txn_first_offset = get<int64_t>(p);
    if (v3) e.coordinator_epoch = get<int32_t>(p);
    const int8_t n = get<int8_t>(p);
    if (n < 0 || n > kProducerBatchesToRetain) return bad("bad batch count");
    if (static_cast<size_t>(end - p) < kBatchSize * static_cast<size_t>(n)) {
      return bad("truncated batches");
    }
    for (int j = 0; j < n; ++j) {
      ProducerBatchMeta m;
      m.first_seq = get<int32_t>(p);
      m.last_seq = get<int32_t>(p);
      m.first_offset = get<int64_t>(p);
      m.last_offset = get<int64_t>(p);
      m.timestamp = get<int64_t>(p);
      e.add(m);
    }
    producers[e.producer_id] = e;
  }
  if (p != end) return bad("trailing bytes");
  producers_ = std::move(producers);
  open_txns_.clear();
  for (const auto& [id, e] : producers_) {
    if (e.txn_first_offset >= 0) open_txns_.insert({e.txn_first_offset, id});
  }
  return offset;
}

std::string producer_snapshot_path(const std::string& dir, int64_t offset) {
  return join_path(dir, offset_file_stem(offset) + std::string(kSnapshotSuffix));
}

Result<std::vector<int64_t>> list_producer_snapshots(Env* env, const std::string& dir) {
  auto names = env->list_dir(dir);
  if (!names.ok()) return names.status();
  std::vector<int64_t> out;
  for (const auto& n : *names) {
    if (auto o = parse_snapshot_name(n)) out.push_back(*o);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status write_producer_snapshot(Env* env, const std::string& dir, const ProducerStateTable& table,
                               int64_t offset, int keep) {
  STRATA_RETURN_IF_ERROR(write_file_atomically(env, producer_snapshot_path(dir, offset),
                                               table.encode_snapshot(offset)));
  auto all = list_producer_snapshots(env, dir);
  if (!all.ok()) return all.status();
  const int excess = static_cast<int>(all->size()) - std::max(1, keep);
  for (int i = 0; i < excess; ++i) {
    if ((*all)[i] == offset) continue;
    Status st = env->remove_file(producer_snapshot_path(dir, (*all)[i]));
    if (!st.ok() && st.code() != Errc::not_found) return st;
  }
  return Status::Ok();
}

Result<std::optional<int64_t>> load_producer_snapshot(Env* env, const std::string& dir,
                                                      int64_t max_offset,
                                                      ProducerStateTable& table) {
  table.clear();
  auto all = list_producer_snapshots(env, dir);
  if (!all.ok()) return all.status();
  for (auto it = all->rbegin(); it != all->rend(); ++it) {
    const std::string path = producer_snapshot_path(dir, *it);
    if (*it <= max_offset) {
      auto text = read_file_to_string(env, path);
      if (text.ok()) {
        auto off = table.decode_snapshot(*text);
        if (off.ok() && *off == *it) return std::optional<int64_t>(*it);
      }
      table.clear();
    }
    // Above the log end (a truncated tail) or unreadable: never valid again.
    Status st = env->remove_file(path);
    if (!st.ok() && st.code() != Errc::not_found) return st;
  }
  return std::optional<int64_t>();
}

}  // namespace strata::storage
