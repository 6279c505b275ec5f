// Checkpoints of primary-key state, recovery from them, the retention bound and the TTL helpers of
// PkState (layout in pk_checkpoint.h, contract in docs/pk-tables.md).
#include "pkindex/pk_checkpoint.h"

#include <fcntl.h>
#include <rocksdb/db.h>
#include <rocksdb/utilities/checkpoint.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <shared_mutex>

#include "pkindex/pk_files.h"
#include "pkindex/pk_scan.h"
#include "pkindex/pk_state.h"
#include "storage/partition_log.h"

namespace strata::pkindex {

namespace stdfs = std::filesystem;  // read-only listing; changes go through files::
namespace rf = row_format;

namespace checkpoint {

namespace {
constexpr std::string_view kTmpSuffix = ".tmp";
Status fs_error(const std::string& what, const std::error_code& ec) {
  return Status(Errc::io_error, what + ": " + ec.message());
}
}  // namespace

std::string dir_of(const std::string& partition_dir) { return partition_dir + "/kv-checkpoints"; }

std::string name_of(int64_t offset) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(offset));
  return buf;
}

Status fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(Errc::io_error, "open " + path + " for fsync failed");
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Status(Errc::io_error, "fsync " + path + " failed");
}

Result<std::vector<int64_t>> list(const std::string& partition_dir) {
  std::vector<int64_t> out;
  std::error_code ec;
  const std::string dir = dir_of(partition_dir);
  if (!stdfs::exists(dir, ec)) return out;
  for (const auto& e : stdfs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() != 20) continue;
    // 20 digits can exceed INT64_MAX (e.g. 99999999999999999999): such a name is not ours.
    int64_t offset = -1;
    const char* end = name.data() + name.size();
    auto [p, err] = std::from_chars(name.data(), end, offset);
    if (err != std::errc() || p != end || offset < 0) continue;
    out.push_back(offset);
  }
  if (ec) return fs_error("list " + dir, ec);
  std::sort(out.begin(), out.end());
  return out;
}

Status remove_leftovers(rocksdb::FileSystem& fs, const std::string& partition_dir) {
  for (const char* d : {"/kv.restore", "/kv.old"}) {
    STRATA_RETURN_IF_ERROR(files::remove_all(fs, partition_dir + d));
  }
  const std::string dir = dir_of(partition_dir);
  auto names = files::children(fs, dir);
  if (!names.ok()) return names.status();
  for (const auto& n : *names) {
    if (n.ends_with(kTmpSuffix)) STRATA_RETURN_IF_ERROR(files::remove_all(fs, dir + "/" + n));
  }
  return Status::Ok();
}

int64_t created_ms(const std::string& partition_dir, int64_t offset) {
  std::error_code ec;
  auto t = stdfs::last_write_time(dir_of(partition_dir) + "/" + name_of(offset), ec);
  if (ec) return -1;
  auto sys = std::chrono::file_clock::to_sys(t);
  return std::chrono::duration_cast<std::chrono::milliseconds>(sys.time_since_epoch()).count();
}

Status restore(rocksdb::FileSystem& fs, const std::string& partition_dir, int64_t offset) {
  const std::string src = dir_of(partition_dir) + "/" + name_of(offset);
  const std::string tmp = partition_dir + "/kv.restore";
  const std::string kv = partition_dir + "/kv";
  const std::string old = partition_dir + "/kv.old";
  STRATA_RETURN_IF_ERROR(files::remove_all(fs, tmp));
  STRATA_RETURN_IF_ERROR(files::create_dir(fs, tmp));
  auto names = files::children(fs, src);
  if (!names.ok()) return names.status();
  for (const auto& n : *names) {
    // SSTs are immutable: a hard link shares them; the rest (MANIFEST, CURRENT, OPTIONS) is copied.
    STRATA_RETURN_IF_ERROR(files::copy_file(fs, src + "/" + n, tmp + "/" + n, n.ends_with(".sst")));
  }
  STRATA_RETURN_IF_ERROR(files::sync_dir(fs, tmp));
  STRATA_RETURN_IF_ERROR(files::sync_dir(fs, partition_dir));  // kv.restore itself
  // kv -> kv.old, kv.restore -> kv: a crash in between leaves no kv (open starts empty and
  // recovers again from the checkpoint or the log); leftovers go at the next open.
  STRATA_RETURN_IF_ERROR(files::remove_all(fs, old));
  if (files::exists(fs, kv)) STRATA_RETURN_IF_ERROR(files::rename(fs, kv, old));
  STRATA_RETURN_IF_ERROR(files::sync_dir(fs, partition_dir));
  STRATA_RETURN_IF_ERROR(files::rename(fs, tmp, kv));
  STRATA_RETURN_IF_ERROR(files::sync_dir(fs, partition_dir));
  return files::remove_all(fs, old);
}

}  // namespace checkpoint

namespace {

Result<int64_t> read_applied(rocksdb::DB* db, const std::string& where) {
  std::string v;
  rocksdb::Status st = db->Get(rocksdb::ReadOptions(),
                               rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()), &v);
  if (st.IsNotFound()) return int64_t{-1};
  if (!st.ok() || v.size() != 8) {
    return Status(Errc::corruption, where + ": bad applied offset: " + st.ToString());
  }
  return rf::get_be64(reinterpret_cast<const uint8_t*>(v.data()));
}

}  // namespace

Status PkState::load_checkpoints() {
  rocksdb::FileSystem& fs = env_->file_system();
  STRATA_RETURN_IF_ERROR(checkpoint::remove_leftovers(fs, log_.dir()));
  auto offsets = checkpoint::list(log_.dir());
  if (!offsets.ok()) return offsets.status();
  // A checkpoint at or past the log end holds state the log lost (torn tail): never usable again,
  // and new writes would reuse its offsets with other contents.
  const int64_t end = log_end_for_state();
  std::vector<int64_t> kept;
  for (int64_t o : *offsets) {
    if (o + 1 > end) {
      STRATA_RETURN_IF_ERROR(
          files::remove_all(fs, checkpoint::dir_of(log_.dir()) + "/" + checkpoint::name_of(o)));
    } else {
      kept.push_back(o);
    }
  }
  if (kept.size() != offsets->size()) {
    STRATA_RETURN_IF_ERROR(files::sync_dir(fs, checkpoint::dir_of(log_.dir())));
  }
  CheckpointInfo newest;
  if (!kept.empty()) {
    newest.offset = kept.back();
    newest.created_ms = checkpoint::created_ms(log_.dir(), kept.back());
  }
  std::lock_guard lk(newest_mu_);
  newest_ = newest;
  newest_ckpt_offset_.store(newest_.offset);
  return Status::Ok();
}

Status PkState::recover_ahead_of_log(PkEnvironment& env) {
  const int64_t end = log_end_for_state();
  const int64_t start = log_.log_start_offset();
  const int64_t applied = applied_offset();
  if (snapshots_) close_snapshot_registry(*snapshots_);
  if (db_) {
    (void)db_->Close();  // no flush: this state is discarded
    db_.reset();
  }
  auto offsets = checkpoint::list(log_.dir());
  if (!offsets.ok()) return offsets.status();
  std::optional<int64_t> pick;
  for (int64_t o : *offsets) {
    if (o + 1 <= end && o + 1 >= start) pick = o;  // ascending: the newest that qualifies
  }
  rocksdb::FileSystem& fs = env.file_system();
  if (pick) {
    STRATA_RETURN_IF_ERROR(checkpoint::restore(fs, log_.dir(), *pick));
    restored_from_ = *pick;
  } else if (start == 0) {
    // Rebuild from the whole log: move kv aside (removed now, or at the next open).
    const std::string old = log_.dir() + "/kv.old";
    STRATA_RETURN_IF_ERROR(files::remove_all(fs, old));
    STRATA_RETURN_IF_ERROR(files::rename(fs, path_, old));
    STRATA_RETURN_IF_ERROR(files::sync_dir(fs, log_.dir()));
    STRATA_RETURN_IF_ERROR(files::remove_all(fs, old));
  } else {
    return Status(Errc::corruption, path_ + ": state at offset " + std::to_string(applied) +
                                        " does not match the log [" + std::to_string(start) + ", " +
                                        std::to_string(end) +
                                        ") and no checkpoint lies in it: partition offline");
  }
  STRATA_RETURN_IF_ERROR(open_db(env));
  auto a = read_applied(db_.get(), path_);
  if (!a.ok()) return a.status();
  applied_offset_.store(*a);
  STRATA_RETURN_IF_ERROR(load_txn_floor());
  STRATA_RETURN_IF_ERROR(load_history_meta());
  persisted_applied_.store(std::min(*a, txn_floor_ - 1));
  return Status::Ok();
}

Result<CheckpointInfo> PkState::create_checkpoint() {
  // ckpt_mu_: one checkpoint at a time. db_mu_ shared: close() waits for this checkpoint, while
  // lookups, scans, newest_checkpoint() and int_property() never do.
  std::lock_guard ckpt(ckpt_mu_);
  {
    // A state with an open transaction needs the log from that transaction's first offset, which
    // a checkpoint offset does not say: retention could pass it. Checkpoint once none is open.
    // (write_mu_ before db_mu_, as write() and close() take them, and released at once.)
    std::lock_guard wl(write_mu_);
    if (!txns_.empty()) return newest_checkpoint();
  }
  auto db_lock = read_lock();
  if (!db_lock) return Status(Errc::shutting_down, "primary-key state is closed");
  const CheckpointInfo newest = newest_checkpoint();  // only this (serialised) function writes it
  const int64_t applied = applied_offset();
  if (applied < 0 || applied == newest.offset) return newest;
  STRATA_RETURN_IF_ERROR(log_.flush());  // log first (the flush listener fsyncs again)
  rocksdb::Status st = db_->Flush(rocksdb::FlushOptions());
  if (!st.ok()) return Status(Errc::io_error, "flush " + path_ + ": " + st.ToString());

  rocksdb::FileSystem& fs = env_->file_system();
  const std::string dir = checkpoint::dir_of(log_.dir());
  if (!files::exists(fs, dir)) {  // once per partition: make kv-checkpoints/ itself durable
    STRATA_RETURN_IF_ERROR(files::create_dir(fs, dir));
    STRATA_RETURN_IF_ERROR(files::sync_dir(fs, log_.dir()));
  }
  const std::string tmp = dir + "/" + checkpoint::name_of(applied) + ".tmp";
  STRATA_RETURN_IF_ERROR(files::remove_all(fs, tmp));
  rocksdb::Checkpoint* raw = nullptr;
  st = rocksdb::Checkpoint::Create(db_.get(), &raw);
  if (!st.ok()) return Status(Errc::io_error, st.ToString());
  std::unique_ptr<rocksdb::Checkpoint> cp(raw);
  st = cp->CreateCheckpoint(tmp, /*log_size_for_flush=*/0);
  if (!st.ok()) {
    (void)files::remove_all(fs, tmp);
    return Status(Errc::io_error, "checkpoint " + tmp + ": " + st.ToString());
  }
  // Applies may have run meanwhile: the checkpoint's own applied offset is the truth.
  int64_t offset = -1;
  {
    rocksdb::Options ro;
    ro.env = env_->rocksdb_env();
    rocksdb::DB* cdb = nullptr;
    st = rocksdb::DB::OpenForReadOnly(ro, tmp, &cdb);
    if (!st.ok()) {
      (void)files::remove_all(fs, tmp);
      return Status(Errc::io_error, "read " + tmp + ": " + st.ToString());
    }
    std::unique_ptr<rocksdb::DB> guard(cdb);
    auto a = read_applied(cdb, tmp);
    std::string floor;
    const bool txn_open =
        cdb->Get(rocksdb::ReadOptions(),
                 rocksdb::Slice(row_format::kTxnFloorKey.data(), row_format::kTxnFloorKey.size()),
                 &floor)
            .ok();
    (void)cdb->Close();
    if (!a.ok()) return a.status();
    offset = *a;
    if (txn_open) offset = -1;  // a transaction opened meanwhile (see above): not this time
  }
  const std::string final_dir = dir + "/" + checkpoint::name_of(offset);
  if (offset < 0 || files::exists(fs, final_dir)) {
    (void)files::remove_all(fs, tmp);
    return newest;
  }
  STRATA_RETURN_IF_ERROR(files::sync_dir(fs, tmp));
  STRATA_RETURN_IF_ERROR(files::rename(fs, tmp, final_dir));
  STRATA_RETURN_IF_ERROR(files::sync_dir(fs, dir));
  // Older checkpoints go before the new one is published, so that whoever sees it (retention,
  // DescribeTable, tests) finds at most checkpoints_retained on disk; until then the bound still
  // comes from the previous newest, which is never removed here with retained >= 2.
  auto all = checkpoint::list(log_.dir());
  if (all.ok()) {
    const size_t keep = static_cast<size_t>(std::max(1, options_.checkpoints_retained));
    for (size_t i = 0; i + keep < all->size(); ++i) {
      (void)files::remove_all(fs, dir + "/" + checkpoint::name_of((*all)[i]));
    }
    if (all->size() > keep) (void)files::sync_dir(fs, dir);
  }
  const CheckpointInfo made{offset, system_clock_ms()};
  {
    std::lock_guard lk(newest_mu_);
    newest_ = made;
    newest_ckpt_offset_.store(offset);
  }
  return made;
}

CheckpointInfo PkState::newest_checkpoint() const {
  std::lock_guard lk(newest_mu_);
  return newest_;
}

std::vector<int64_t> PkState::checkpoint_offsets() const {
  auto l = checkpoint::list(log_.dir());
  return l.ok() ? *l : std::vector<int64_t>{};
}

int64_t PkState::retention_bound() const {
  const int64_t ckpt = newest_ckpt_offset_.load();
  if (ckpt < 0) return 0;
  int64_t bound = std::min(persisted_applied_.load() + 1, ckpt + 1);
  // A live Scan snapshot at X promises "ReadChangelog from X" (pk_scan.h): keep offsets >= X. The
  // registry's shared lock is only ever held exclusively for snapshot open/release/close.
  if (snapshots_) {
    std::shared_lock lk(snapshots_->mu);
    for (const PkSnapshot* s : snapshots_->live) bound = std::min(bound, s->snapshot_offset());
  }
  return bound;
}

bool PkState::expired(const row_format::RowView& row, int64_t now_ms) const {
  return row_expired(row, options_.table.ttl_ms, now_ms);
}

Status PkState::compact() {
  auto db_lock = read_lock();  // close() waits for it
  if (!db_lock) return Status(Errc::shutting_down, "closed");
  rocksdb::Status st = db_->Flush(rocksdb::FlushOptions());
  if (st.ok()) {
    rocksdb::CompactRangeOptions o;
    o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    st = db_->CompactRange(o, nullptr, nullptr);
  }
  return st.ok() ? Status::Ok() : Status(Errc::io_error, "compact " + path_ + ": " + st.ToString());
}

}  // namespace strata::pkindex
