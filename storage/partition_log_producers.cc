// PartitionLog's producer and transaction state: rebuild at open (newest producer snapshot <= log
// end, then a replay of the batch headers after it, which also re-derives the aborted-transaction
// index), transaction markers, the LSO and aborted-transaction queries, expiration and
// introspection (see partition_log.h, producer_state.h and txn_index.h). The dedupe check itself
// sits in PartitionLog::append (partition_log.cc).
#include <algorithm>

#include "protocol/record/batch_format.h"
#include "protocol/record/control_batch.h"
#include "protocol/record/record_batch.h"
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"

namespace strata::storage {

namespace bf = protocol::batch_format;

namespace {

AbortedTxn aborted_entry(const CompletedTxn& t) {
  return AbortedTxn{t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset};
}

}  // namespace

Status PartitionLog::rebuild_producer_state() {
  std::lock_guard<std::mutex> lock(append_mu_);
  auto snap = load_producers_locked(log_end_offset(), &producer_batches_replayed_);
  if (!snap.ok()) return snap.status();
  producer_snapshot_at_open_ = *snap;
  return Status::Ok();
}

Result<std::optional<int64_t>> PartitionLog::load_producers_locked(int64_t end, int64_t* replayed) {
  *replayed = 0;
  auto snap = load_producer_snapshot(env_, dir_, end, producers_);
  if (!snap.ok()) return snap.status();
  const int64_t from = snap->value_or(0);
  std::vector<std::pair<int64_t, AbortedTxn>> aborted;
  if (from < end) {
    std::shared_lock<std::shared_mutex> state(state_mu_);
    STRATA_RETURN_IF_ERROR(replay_locked(from, end, producers_, &aborted, replayed));
  }
  publish_txn_state_locked();
  STRATA_RETURN_IF_ERROR(rebuild_txn_index_locked(from, end, aborted));
  return *snap;
}

Status PartitionLog::replay_locked(int64_t from, int64_t end, ProducerStateTable& table,
                                   std::vector<std::pair<int64_t, AbortedTxn>>* aborted,
                                   int64_t* replayed) const {
  // Every batch whose last offset is >= `from`, reading only the 61-byte headers (and the first
  // record of a control batch).
  const size_t first = segment_index_for(from);
  uint8_t header[bf::kHeaderSize];
  std::vector<uint8_t> control;
  for (size_t si = first; si < segments_.size(); ++si) {
    const Segment& seg = *segments_[si];
    const auto& file = seg.log_file();
    uint64_t pos = 0;
    while (pos + bf::kHeaderSize <= seg.size()) {
      auto n = file->read(pos, bf::kHeaderSize, header);
      if (!n.ok()) return n.status();
      if (*n != bf::kHeaderSize) {
        return Status(Errc::corruption, "short batch header in " + file->path());
      }
      const size_t size = protocol::peek_batch_size({header, bf::kHeaderSize});
      if (size < bf::kHeaderSize) {
        return Status(Errc::corruption, "bad batch length in " + file->path());
      }
      protocol::RecordBatchView view({header, bf::kHeaderSize});
      if (view.base_offset() >= end) return Status::Ok();
      if (view.last_offset() >= from && view.producer_id() >= 0) {
        if (view.is_control()) {
          control.resize(size);
          auto c = file->read(pos, size, control.data());
          if (!c.ok()) return c.status();
          if (*c != size) return Status(Errc::corruption, "short control batch in " + file->path());
          if (auto marker = protocol::parse_marker(control)) {
            const CompletedTxn t =
                table.apply_marker(view.producer_id(), view.producer_epoch(), view.base_offset(),
                                   marker->commit, view.max_timestamp(), marker->coordinator_epoch);
            if (t.aborted) aborted->emplace_back(seg.base_offset(), aborted_entry(t));
          }
        } else {
          table.apply(ProducerBatch{view.producer_id(), view.producer_epoch(), view.base_sequence(),
                                    view.last_offset_delta(), view.max_timestamp()},
                      view.base_offset(), view.is_transactional());
          ++*replayed;
        }
      }
      pos += size;
    }
  }
  return Status::Ok();
}

Status PartitionLog::rebuild_txn_index_locked(
    int64_t from, int64_t end, const std::vector<std::pair<int64_t, AbortedTxn>>& replayed) {
  std::vector<std::shared_ptr<Segment>> segs;
  {
    std::shared_lock<std::shared_mutex> state(state_mu_);
    segs = segments_;
  }
  // An entry whose marker lies below the snapshot was fsynced before the snapshot was written (an
  // entry is fsynced with its marker), so the file is trusted there; at and above it the replay
  // is the truth (a torn tail, a marker cut by recovery or truncation).
  std::map<int64_t, std::vector<AbortedTxn>> next;
  std::vector<size_t> rewrite;
  std::vector<size_t> lost;  // no or a torn file, and part of the segment lies below the snapshot
  for (size_t i = 0; i < segs.size(); ++i) {
    const int64_t base = segs[i]->base_offset();
    auto file = read_txn_index(env_, segment_txn_index_path(dir_, base));
    if (!file.ok()) return file.status();
    std::vector<AbortedTxn>& entries = next[base];
    if (file->has_value()) {
      for (const AbortedTxn& e : (*file)->entries) {
        if (e.last_offset < from && e.last_offset < segs[i]->next_offset()) entries.push_back(e);
      }
    }
    // Entries lost below the snapshot (no file, or a torn one) only a deeper replay can restore.
    if ((!file->has_value() || (*file)->torn) && base < from) lost.push_back(i);
    for (const auto& [b, e] : replayed) {
      if (b == base) entries.push_back(e);
    }
    if (!file->has_value() || (*file)->torn || (*file)->entries != entries) rewrite.push_back(i);
  }
  if (!lost.empty()) {
    // A lost or torn file (or none, from before transactions existed): only a replay from the log
    // start knows the transactions open at its segment's base.
    ProducerStateTable scratch;
    std::vector<std::pair<int64_t, AbortedTxn>> all;
    int64_t n = 0;
    {
      std::shared_lock<std::shared_mutex> state(state_mu_);
      STRATA_RETURN_IF_ERROR(replay_locked(segs.front()->base_offset(), end, scratch, &all, &n));
    }
    for (size_t i : lost) {
      std::vector<AbortedTxn>& entries = next[segs[i]->base_offset()];
      entries.clear();
      for (const auto& [b, e] : all) {
        if (b == segs[i]->base_offset()) entries.push_back(e);
      }
    }
  }
  for (size_t i : rewrite) {
    const int64_t base = segs[i]->base_offset();
    STRATA_RETURN_IF_ERROR(write_file_atomically(env_, segment_txn_index_path(dir_, base),
                                                 encode_aborted_txns(next[base])));
  }
  std::lock_guard<std::mutex> txn(txn_mu_);
  aborted_ = std::move(next);
  return Status::Ok();
}

Status PartitionLog::track_batch_locked(std::span<const uint8_t> batch, int64_t base) {
  protocol::RecordBatchView view(batch);
  if (view.producer_id() < 0) return Status::Ok();
  if (!view.is_control()) {
    producers_.apply(ProducerBatch{view.producer_id(), view.producer_epoch(), view.base_sequence(),
                                   view.last_offset_delta(), view.max_timestamp()},
                     base, view.is_transactional());
    publish_txn_state_locked();
    return Status::Ok();
  }
  const std::optional<protocol::Marker> marker = protocol::parse_marker(batch);
  if (!marker) return Status::Ok();
  const CompletedTxn t =
      producers_.apply_marker(view.producer_id(), view.producer_epoch(), base, marker->commit,
                              view.max_timestamp(), marker->coordinator_epoch);
  publish_txn_state_locked();
  if (!t.aborted) return Status::Ok();
  // The batch was just written to the active segment.
  const int64_t seg = segments_.back()->base_offset();
  const AbortedTxn entry = aborted_entry(t);
  {
    std::lock_guard<std::mutex> txn(txn_mu_);
    aborted_[seg].push_back(entry);
  }
  Status st = append_txn_index(env_, segment_txn_index_path(dir_, seg), entry);
  // The file may now hold a partial entry; the next open re-derives it from the log (the marker is
  // above every snapshot), so stop writing until then.
  if (!st.ok()) failed_ = true;
  return st;
}

void PartitionLog::publish_txn_state_locked() {
  first_unstable_offset_.store(
      producers_.first_open_txn_offset().value_or(std::numeric_limits<int64_t>::max()),
      std::memory_order_release);
}

Result<PartitionLog::AppendInfo> PartitionLog::append_marker(int64_t producer_id, int16_t epoch,
                                                             int32_t coordinator_epoch, bool commit,
                                                             int64_t now_ms) {
  std::vector<uint8_t> batch =
      protocol::build_marker(producer_id, epoch, coordinator_epoch, commit, now_ms);

  int64_t new_leo = 0;
  bool hw_advanced = false;
  AppendInfo out{};
  {
    std::lock_guard<std::mutex> lock(append_mu_);
    STRATA_RETURN_IF_ERROR(writable_locked());
    if (replicated_ && !leading_) {
      return Status(Errc::invalid_argument, "log " + dir_ + " is not the leader's replica");
    }
    ProducerCheckResult check = producers_.check_marker(producer_id, epoch, coordinator_epoch);
    if (check.kind != ProducerCheck::ok) {
      out.producer_check = check.kind;
      out.leader_epoch = leader_epoch();
      out.producer_message = std::move(check.message);
      return out;
    }
    const int64_t base = log_end_offset();
    const int32_t leader = leader_epoch();
    protocol::set_base_offset(batch, base);
    protocol::set_partition_leader_epoch(batch, leader);
    auto written = write_batch_locked(batch, base, base, now_ms, leader, 1, now_ms);
    if (!written.ok()) return written.status();
    new_leo = *written;
    hw_advanced = !replicated_ && publish_high_watermark(new_leo);
    STRATA_RETURN_IF_ERROR(track_batch_locked(batch, base));
    out.base_offset = base;
    out.last_offset = base;
    out.leader_epoch = leader;
  }
  if (listeners_) {
    if (listeners_->log_end) listeners_->log_end(*this, new_leo);
    if (hw_advanced && listeners_->high_watermark)
      listeners_->high_watermark(*this, high_watermark());
  }
  return out;
}

std::vector<AbortedTxn> PartitionLog::aborted_transactions(int64_t fetch_offset,
                                                           int64_t upper_bound) const {
  const int64_t start = log_start_offset();
  std::vector<AbortedTxn> out;
  std::lock_guard<std::mutex> txn(txn_mu_);
  // Segments deleted by retention: their entries all end below the log start.
  while (!aborted_.empty() &&
         std::all_of(aborted_.begin()->second.begin(), aborted_.begin()->second.end(),
                     [start](const AbortedTxn& e) { return e.last_offset < start; }) &&
         aborted_.size() > 1) {
    aborted_.erase(aborted_.begin());
  }
  for (const auto& [base, entries] : aborted_) {
    for (const AbortedTxn& e : entries) {
      if (e.last_offset >= fetch_offset && e.first_offset < upper_bound) out.push_back(e);
    }
  }
  return out;
}

size_t PartitionLog::expire_producers(int64_t now_ms, int64_t expiration_ms) {
  std::lock_guard<std::mutex> lock(append_mu_);
  return producers_.expire(now_ms, expiration_ms);
}

std::optional<ProducerEntry> PartitionLog::producer_state(int64_t producer_id) const {
  std::lock_guard<std::mutex> lock(append_mu_);
  const ProducerEntry* e = producers_.find(producer_id);
  return e ? std::optional<ProducerEntry>(*e) : std::nullopt;
}

std::vector<ProducerEntry> PartitionLog::producer_states() const {
  std::lock_guard<std::mutex> lock(append_mu_);
  return producers_.entries();
}

}  // namespace strata::storage
