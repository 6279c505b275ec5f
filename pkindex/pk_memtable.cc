// PkState's memtable upkeep: memtable bloom filters taken from the environment's bounded supply
// by partitions that write, and idle partitions' memtables flushed so they hold no write buffer
// (pk_environment.h says why; docs/pk-tables.md, "What an idle partition costs").
#include <rocksdb/db.h>

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
  auto idle = [&] {
    return written_since_flush_.load(std::memory_order_acquire) &&
           now_ms - last_write_ms_.load(std::memory_order_relaxed) >= idle_ms;
  };
  auto wants_bloom = [&] {
    return !bloom_held_.load(std::memory_order_relaxed) &&
           written_since_idle_.load(std::memory_order_relaxed) >=
               env_->options().memtable_bloom_after_bytes &&
           env_->memtable_blooms_in_use() < env_->memtable_bloom_slots();
  };
  if (!idle() && !wants_bloom()) return MemtableStep::none;  // the common case: two loads
  std::lock_guard wl(write_mu_);  // no write in between: the filter's flags are write_mu_'s
  auto lk = read_lock();
  if (!lk || failed_) return MemtableStep::none;  // closing, or offline until healed
  if (idle()) {
    STRATA_RETURN_IF_ERROR(flush_idle_locked());
    return MemtableStep::flushed_idle;
  }
  if (!wants_bloom() || !env_->take_memtable_bloom()) return MemtableStep::none;
  if (Status st = take_bloom_locked(); !st.ok()) {
    env_->release_memtable_bloom();
    return st;
  }
  return MemtableStep::took_bloom;
}

// The filter is released only once the memtable that has it is sealed: if the switch fails (RocksDB
// refuses while writes are stopped), the next tick tries again.
Status PkState::flush_idle_locked() {
  if (bloom_held_.load(std::memory_order_relaxed)) {
    rocksdb::Status st = db_->SetOptions({{"memtable_prefix_bloom_size_ratio", "0"}});
    // SetOptions applies the options before it persists them: what counts is what it applied.
    if (!st.ok() && db_->GetOptions().memtable_prefix_bloom_size_ratio != 0) {
      return Status(Errc::io_error, path_ + ": memtable bloom filter off: " + st.ToString());
    }
    // RocksDB does not switch an empty memtable (the filter's memtable when nothing was written
    // after the switch that brought it): the applied offset, rewritten as it is, makes it
    // non-empty.
    uint8_t buf[8];
    rf::put_be64(buf, applied_offset());
    rocksdb::WriteBatch wb;
    wb.Put(rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()),
           rocksdb::Slice(reinterpret_cast<const char*>(buf), 8));
    rocksdb::WriteOptions wo;
    wo.disableWAL = true;
    if (st = db_->Write(wo, &wb); !st.ok()) {
      return Status(Errc::io_error, path_ + ": idle flush: " + st.ToString());
    }
  }
  if (rocksdb::Status st = switch_memtable(*db_); !st.ok()) {
    return Status(Errc::io_error, path_ + ": idle flush: " + st.ToString());
  }
  if (bloom_held_.exchange(false, std::memory_order_relaxed)) env_->release_memtable_bloom();
  written_since_idle_.store(0, std::memory_order_relaxed);
  written_since_flush_.store(false, std::memory_order_release);
  return Status::Ok();
}

Status PkState::take_bloom_locked() {
  const std::string ratio = std::to_string(PkEnvironment::kMemtableBloomRatio);
  rocksdb::Status st = db_->SetOptions({{"memtable_prefix_bloom_size_ratio", ratio}});
  if (!st.ok() && db_->GetOptions().memtable_prefix_bloom_size_ratio == 0) {
    return Status(Errc::io_error, path_ + ": memtable bloom filter: " + st.ToString());
  }
  bloom_held_.store(true, std::memory_order_relaxed);
  // The active memtable was made without one: switch now (a small SST of what was written since
  // open). Should the switch fail, the next one RocksDB makes has the filter.
  (void)switch_memtable(*db_);
  return Status::Ok();
}

}  // namespace strata::pkindex
