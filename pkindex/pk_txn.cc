// PkState's transactions: rows of an open transaction held until its marker, key locks, and the
// replay that finds open transactions again (see pk_state.h and docs/pk-tables.md).
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <limits>

#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"
#include "protocol/record/control_batch.h"

namespace strata::pkindex {

namespace rf = row_format;

Result<storage::PartitionLog::AppendInfo> PkState::end_transaction(int64_t producer_id, bool commit,
                                                                   const MarkerAppendFn& append) {
  quiet_perf_context();
  std::lock_guard wl(write_mu_);
  WritingScope writing(this);
  if (failed_) STRATA_RETURN_IF_ERROR(heal_locked());
  auto r = append();
  if (!r.ok() || r->producer_check != storage::ProducerCheck::ok) return r;
  // A replicated state applies markers with the rest of the log as the high watermark passes.
  if (options_.replicated) {
    if (!leading_) return r;  // (the log refuses a follower's append: not reached)
    if (Status st = decide_held_txn_locked(producer_id, commit, r->base_offset); !st.ok()) {
      failed_ = true;  // the overlay and the log disagree on offsets: the state is unusable
      clear_pending_locked();
      return st;
    }
    return r;
  }
  // Plain batches are applied at their append (one node): the overlay is empty here, and the
  // marker's offset follows everything applied.
  STRATA_RETURN_IF_ERROR(end_txn_locked(producer_id, commit, r->base_offset));
  return r;
}

Status PkState::end_txn_locked(int64_t producer_id, bool commit, int64_t marker_offset) {
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  rocksdb::WriteBatch wb;
  if (auto it = txns_.find(producer_id); it != txns_.end()) {
    release_locks_locked(producer_id, it->second);
    for (Overlay::Batch& b : it->second.batches.batches()) {
      if (!commit) break;
      for (Overlay::Op& op : b.ops) {
        if (op.encoded.empty()) {
          wb.Delete(op.key);
        } else {
          rf::patch_offset(op.encoded, b.base_offset + op.offset_delta);
          wb.Put(op.key, op.encoded);
        }
        put_history(wb, op.key, op.encoded, op.timestamp, b.base_offset + op.offset_delta);
      }
    }
    txns_.erase(it);
  }
  return write_applied(wb, marker_offset);
}

Status PkState::decide_held_txn_locked(int64_t producer_id, bool commit, int64_t marker_offset) {
  Overlay::Batch decided;
  if (auto it = txns_.find(producer_id); it != txns_.end()) {
    // Kept as the replay floor until the marker is applied, ABORT too: a marker above the high
    // watermark may still be cut by a leader change, and the transaction is open again.
    decided.txn_first_offset = it->second.first_offset;
    release_locks_locked(producer_id, it->second);
    for (Overlay::Batch& b : it->second.batches.batches()) {
      if (!commit) break;
      for (Overlay::Op& op : b.ops) {
        op.offset = b.base_offset + op.offset_delta;
        if (!op.encoded.empty()) rf::patch_offset(op.encoded, op.offset);
        decided.ops.push_back(std::move(op));
      }
      for (auto& [key, row] : b.rows) decided.rows[key] = std::move(row);  // newest batch wins
    }
    txns_.erase(it);
  }
  const uint64_t id = overlay_.push(std::move(decided));
  return overlay_.appended(id, marker_offset);
}

Status PkState::hold_batch_locked(const protocol::RecordBatchView& batch) {
  const int64_t pid = batch.producer_id();
  if (batch.is_control() && pid >= 0) {
    if (const std::optional<bool> commit = protocol::marker_type(batch.bytes())) {
      return decide_held_txn_locked(pid, *commit, batch.base_offset());
    }
  } else if (batch.is_transactional()) {
    OpenTxn& txn = txns_[pid];
    STRATA_RETURN_IF_ERROR(hold_changelog_locked(batch, batch.base_offset(), txn.batches));
    hold_in_txn_locked(pid, txn, batch.base_offset());
    return Status::Ok();
  }
  return hold_changelog_locked(batch, batch.base_offset(), overlay_);
}

void PkState::release_locks_locked(int64_t producer_id, const OpenTxn& txn) {
  for (const Overlay::Batch& b : txn.batches.batches()) {
    for (const Overlay::Op& op : b.ops) {
      if (auto l = txn_locks_.find(op.key); l != txn_locks_.end() && l->second == producer_id) {
        txn_locks_.erase(l);
      }
    }
  }
}

void PkState::hold_in_txn_locked(int64_t producer_id, OpenTxn& txn, int64_t base_offset) {
  if (txn.first_offset < 0) txn.first_offset = base_offset;
  for (const auto& [key, row] : txn.batches.back().rows) txn_locks_[key] = producer_id;
}

Status PkState::replay_batch_locked(const protocol::RecordBatchView& batch) {
  const int64_t pid = batch.producer_id();
  if (batch.is_control() && pid >= 0) {
    const int64_t offset = batch.base_offset();
    const std::optional<bool> commit = protocol::marker_type(batch.bytes());
    if (offset <= applied_offset()) {
      // Decided before the state's applied offset: its rows are in (or were never meant for)
      // the state; only what was held again from below the applied offset goes.
      if (commit.has_value()) {
        if (auto it = txns_.find(pid); it != txns_.end()) {
          release_locks_locked(pid, it->second);
          txns_.erase(it);
        }
      }
      return Status::Ok();
    }
    if (!commit) return apply_changelog_locked(batch, offset);  // another control type
    return end_txn_locked(pid, *commit, offset);
  }
  if (batch.is_transactional() && !batch.is_control()) {
    OpenTxn& txn = txns_[pid];
    STRATA_RETURN_IF_ERROR(hold_changelog_locked(batch, batch.base_offset(), txn.batches));
    hold_in_txn_locked(pid, txn, batch.base_offset());
    return Status::Ok();
  }
  return apply_changelog_locked(batch, batch.base_offset());
}

void PkState::clear_pending_locked() {
  overlay_.clear();
  txns_.clear();
  txn_locks_.clear();
  txns_through_ = -1;
}

int64_t PkState::open_txn_floor_locked() const {
  int64_t floor = std::numeric_limits<int64_t>::max();
  for (const auto& [pid, txn] : txns_) {
    if (txn.first_offset >= 0) floor = std::min(floor, txn.first_offset);
  }
  // Committed on a replicated leader but not applied yet: a replay must find its records again.
  for (const Overlay::Batch& b : overlay_.batches()) {
    if (b.txn_first_offset >= 0) floor = std::min(floor, b.txn_first_offset);
  }
  return floor;
}

Status PkState::load_txn_floor() {
  std::string v;
  rocksdb::Status st = db_->Get(
      rocksdb::ReadOptions(), rocksdb::Slice(rf::kTxnFloorKey.data(), rf::kTxnFloorKey.size()), &v);
  if (st.IsNotFound()) {
    txn_floor_ = std::numeric_limits<int64_t>::max();
    return Status::Ok();
  }
  if (!st.ok() || v.size() != 8) {
    return Status(Errc::corruption, path_ + ": bad transaction floor: " + st.ToString());
  }
  txn_floor_ = rf::get_be64(reinterpret_cast<const uint8_t*>(v.data()));
  return Status::Ok();
}

size_t PkState::open_transactions() const {
  std::lock_guard wl(write_mu_);
  return txns_.size();
}

size_t PkState::locked_keys() const {
  std::lock_guard wl(write_mu_);
  return txn_locks_.size();
}

}  // namespace strata::pkindex
