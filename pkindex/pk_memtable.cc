// PkState's memtable upkeep: memtable bloom filters taken from the environment's bounded supply
// by partitions that write, and idle partitions' memtables flushed so they hold no write buffer
// (pk_environment.h says why; docs/pk-tables.md, "What an idle partition costs").
#include <rocksdb/db.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"

namespace strata::pkindex {

namespace rf = row_format;

namespace {

rocksdb::Status switch_memtable(rocksdb::DB& db) {
  rocksdb::FlushOptions fo;
  fo.wait = false;              // the flush itself runs in RocksDB's background
  fo.allow_write_stall = true;  // nor wait for a stall to clear
  return db.Flush(fo);
}

}  // namespace

int64_t PkState::steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void PkState::note_memtable_write(size_t bytes) {
  written_since_idle_.fetch_add(bytes, std::memory_order_relaxed);
  last_write_ms_.store(steady_ms(), std::memory_order_relaxed);
  written_since_flush_.store(true, std::memory_order_release);
}

Result<PkState::MemtableStep> PkState::tend_memtable(int64_t now_ms, int64_t idle_ms) {
  // Bytes written count per window of idle_ms: a partition holds a filter while it writes
  // memtable_bloom_after_bytes per window, so partitions that trickle cannot keep every slot.
  const int64_t window_start = window_start_ms_.load(std::memory_order_relaxed);
  const bool window_over = now_ms - window_start >= idle_ms;
  const size_t after = env_->options().memtable_bloom_after_bytes;
  const bool held = bloom_held_.load(std::memory_order_relaxed);
  const size_t written = written_since_idle_.load(std::memory_order_relaxed);
  const bool dirty = written_since_flush_.load(std::memory_order_acquire);
  const int64_t quiet_ms = now_ms - last_write_ms_.load(std::memory_order_relaxed);
  const bool idle = dirty && quiet_ms >= idle_ms;
  // RocksDB's write-buffer manager only ever flushes the partition being written: memtables of
  // partitions that just stopped (a table loaded a moment ago) would hold the shared budget for
  // idle_ms and make every busy partition flush small memtables. While the budget is half used
  // by memtables still taking writes, a partition not written for kPressureQuietMs whose
  // memtable holds a sizeable share of it flushes (small ones wait to be idle: an SST per
  // write of every partition that trickles would cost more than their memory).
  const bool quiet_under_pressure = quiet_ms >= kPressureQuietMs && env_->write_buffer_pressed();
  const bool pressed =
      dirty && !idle && quiet_under_pressure &&
      int_property("rocksdb.cur-size-active-mem-table").value_or(0) >= env_->pressure_flush_floor();
  const bool slow = held && window_over && written < after;  // gives its filter back too
  // Not for a partition the pressure would flush again at its next pause.
  const bool wants = !held && written >= after && !quiet_under_pressure &&
                     env_->memtable_blooms_in_use() < env_->memtable_bloom_slots();
  if (window_over) {
    written_since_idle_.fetch_sub(written, std::memory_order_relaxed);
    window_start_ms_.store(now_ms, std::memory_order_relaxed);
  }
  if (!idle && !pressed && !slow && !wants) return MemtableStep::none;  // the common case
  if (now_ms < upkeep_retry_ms_.load(std::memory_order_relaxed)) return MemtableStep::none;
  std::lock_guard wl(write_mu_);  // no write in between: the filter's flags are write_mu_'s
  auto lk = read_lock();
  if (!lk) return MemtableStep::none;  // closing
  // A write may have landed since the decision: it is no longer quiet (nor idle).
  if ((idle || pressed) && !slow && !wants &&
      now_ms - last_write_ms_.load(std::memory_order_relaxed) <
          std::min(idle_ms, kPressureQuietMs)) {
    return MemtableStep::none;
  }
  Status st;
  MemtableStep step = MemtableStep::none;
  if (failed_) {  // offline until healed: its RocksDB takes no writes
    // The pressure alone is no reason to report it again every second.
    if (!idle && !slow && !wants) return MemtableStep::none;
    st = Status(Errc::io_error, path_ + ": offline after an I/O error");
  } else if (idle || pressed || slow) {
    auto flushed = flush_idle_locked();
    st = flushed.status();
    if (st.ok()) {
      step = !*flushed      ? MemtableStep::deferred
             : idle || slow ? MemtableStep::flushed_idle
                            : MemtableStep::flushed_pressed;
    }
  } else if (env_->take_memtable_bloom()) {
    st = take_bloom_locked();
    if (!st.ok()) env_->release_memtable_bloom();
    step = MemtableStep::took_bloom;
  }
  if (step == MemtableStep::deferred && window_over) {
    // The give-back was put off: the window it ended stays ended, so the next upkeep tries again
    // (a new window would let a slow writer keep its filter a whole window longer).
    written_since_idle_.fetch_add(written, std::memory_order_relaxed);
    window_start_ms_.store(window_start, std::memory_order_relaxed);
  }
  if (!st.ok()) {  // a full disk: not again for a while (each try rewrites OPTIONS files)
    upkeep_retry_ms_.store(now_ms + kHealIntervalMs, std::memory_order_relaxed);
    return st;
  }
  return step;
}

// The filter's slot is released once the memtable that has it is sealed (its memory goes when
// RocksDB's background flush of it completes): if the switch fails (RocksDB refuses while writes
// are stopped), a later upkeep tries again.
Result<bool> PkState::flush_idle_locked() {
  if (bloom_held_.load(std::memory_order_relaxed)) {
    // RocksDB does not switch an empty memtable (the filter's memtable when nothing was written
    // after the switch that brought it): the applied offset, rewritten as it is, makes it
    // non-empty. Written before anything changes and never waiting for a stall (the checkpoint
    // thread would hold write_mu_): a stall means the partition's earlier memtables are still
    // being flushed, which is no failure, so the step is put off to a later upkeep as it was.
    uint8_t buf[8];
    rf::put_be64(buf, applied_offset());
    rocksdb::WriteBatch wb;
    wb.Put(rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()),
           rocksdb::Slice(reinterpret_cast<const char*>(buf), 8));
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    wo.no_slowdown = true;
    if (rocksdb::Status r = db_->Write(wo, &wb); r.IsIncomplete()) {
      return false;
    } else if (!r.ok()) {
      return Status(Errc::io_error, path_ + ": idle flush: " + r.ToString());
    }
    STRATA_RETURN_IF_ERROR(set_bloom_ratio_locked(0));
  }
  // Cleared before the switch: a write that lands in the new memtable sets it again.
  written_since_flush_.store(false, std::memory_order_release);
  if (rocksdb::Status r = switch_memtable(*db_); !r.ok()) {
    written_since_flush_.store(true, std::memory_order_release);
    return Status(Errc::io_error, path_ + ": idle flush: " + r.ToString());
  }
  if (bloom_held_.exchange(false, std::memory_order_relaxed)) env_->release_memtable_bloom();
  written_since_idle_.store(0, std::memory_order_relaxed);
  return true;
}

Status PkState::set_bloom_ratio_locked(double ratio) {
  rocksdb::Status st =
      db_->SetOptions({{"memtable_prefix_bloom_size_ratio", std::to_string(ratio)}});
  // SetOptions applies the options before it persists them: what counts is what it applied.
  if (!st.ok() && db_->GetOptions().memtable_prefix_bloom_size_ratio != ratio) {
    return Status(Errc::io_error, path_ + ": memtable bloom filter ratio: " + st.ToString());
  }
  return Status::Ok();
}

Status PkState::take_bloom_locked() {
  STRATA_RETURN_IF_ERROR(set_bloom_ratio_locked(PkEnvironment::kMemtableBloomRatio));
  bloom_held_.store(true, std::memory_order_relaxed);
  // The active memtable was made without one: switch now (a small SST of what was written since
  // open). Should the switch fail, the next one RocksDB makes has the filter.
  (void)switch_memtable(*db_);
  return Status::Ok();
}

}  // namespace strata::pkindex
