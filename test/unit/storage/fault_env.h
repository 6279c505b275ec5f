// FaultInjectionEnv: a test Env wrapping the default one that simulates power loss and I/O failure
// (after LevelDB's fault_injection_test). It remembers, per file written through it, how many bytes
// were last fsynced, and the directory operations (file creations, renames) not yet followed by a
// sync_dir of their directory.
//
//   drop_unsynced_data()  power loss: undoes un-synced renames (restoring a replaced file's old
//                         content), creations (deleting the file) and file removals (the file
//                         comes back with its synced content), then truncates every tracked file
//                         to its last synced size. A whole directory removed with
//                         remove_dir_recursive stays removed (a topic deletion; recovery of a
//                         half-removed partition is the broker's, not this Env's, concern).
//                         Files that existed before this Env touched them count as fully synced.
//                         Destroy every object holding files from this Env before calling it.
//   fail_after(n)         the next n mutating operations succeed, then every mutating operation
//                         fails with Errc::io_error (a dead disk / crashed process).
//   set_hook(fn)          fn(op, path) runs before each mutating operation; a non-ok Status fails
//                         it (stop at a named step: "append", "sync", "truncate",
//                         "new_writable_file", "rename", "remove_file", "remove_dir", "create_dir",
//                         "sync_dir").
//   set_torn_appends(on)  a failing append first writes half of its bytes (a torn write).
//   fail_syncs(n, suffix) the next n WritableFile::sync calls on files whose path ends with
//                         `suffix` ("" = any) fail with Errc::io_error (fsync returning EIO) and
//                         sync nothing; every other operation keeps working (= inject(sync, ...)).
//   inject(op, fault)     the next fault.count operations of one kind on paths ending with
//                         fault.path_suffix fail as the OS would with fault.err, classified by
//                         storage::file_error / sync_error like the POSIX Env (ENOSPC -> no_space,
//                         EMFILE -> unavailable, EIO -> io_error; a sync is always io_error):
//                           write  WritableFile::append; with fault.short_write > 0 that many
//                                  bytes (at most all but one) land before the failure;
//                           open   new_writable_file and new_random_access_file;
//                           sync   WritableFile::sync ("fsync EIO once, then success" = count 1).
//                         count -1 = every such operation until clear_faults() (a full disk).
//
// Test-only. Thread-safe (one mutex over the bookkeeping).
#pragma once

#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/env.h"

namespace strata::storage::testing {

enum class FaultOp { write, open, sync };

struct Fault {
  int err = EIO;
  int64_t count = 1;        // operations that fail; -1 = all until clear_faults()
  std::string path_suffix;  // only paths ending with this ("" = any)
  size_t short_write = 0;   // write: bytes written before the failure
};

class FaultInjectionEnv final : public Env {
 public:
  using Hook = std::function<Status(std::string_view op, const std::string& path)>;

  explicit FaultInjectionEnv(Env* base = default_env()) : base_(base) {}

  Status drop_unsynced_data();
  void fail_after(int64_t n);
  void clear_faults();
  void set_hook(Hook hook);
  void set_torn_appends(bool on);
  void fail_syncs(int64_t n, std::string path_suffix = "");
  void inject(FaultOp op, Fault fault);
  // Injected failures (inject / fail_syncs) that fired so far.
  int64_t injected_count() const;
  // Mutating operations attempted so far.
  int64_t op_count() const;
  // RandomAccessFile::write_back calls on files opened through this Env, per path (they make no
  // durability claim, so drop_unsynced_data ignores them).
  int64_t write_backs(const std::string& path) const;
  void on_write_back(const std::string& path);

  // Env
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                          bool truncate) override;
  Result<std::shared_ptr<RandomAccessFile>> new_random_access_file(
      const std::string& path) override;
  bool file_exists(const std::string& path) override { return base_->file_exists(path); }
  bool is_directory(const std::string& path) override { return base_->is_directory(path); }
  Result<uint64_t> file_size(const std::string& path) override { return base_->file_size(path); }
  Status truncate_file(const std::string& path, uint64_t size) override;
  Status rename_file(const std::string& from, const std::string& to) override;
  Status remove_file(const std::string& path) override;
  Status remove_dir_recursive(const std::string& path) override;
  Status create_dir(const std::string& path) override;
  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    return base_->list_dir(path);
  }
  Status sync_dir(const std::string& path) override;

  // Used by the file wrappers.
  Status check(std::string_view op, const std::string& path);
  void on_synced(const std::string& path, uint64_t size);
  void on_truncated(const std::string& path, uint64_t size);
  bool torn_appends() const;
  // Consumes one injected failure of `op` on `path`, if one is pending.
  std::optional<Fault> take_fault(FaultOp op, const std::string& path);

 private:
  struct PendingOp {
    enum Kind { create, rename, remove } kind;
    std::string path;                             // created or removed file, or rename target
    std::string from;                             // rename source
    std::optional<std::string> replaced_content;  // old content of the rename target / removed
    std::optional<uint64_t> replaced_synced;
  };

  Env* base_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> synced_;  // path -> durable size
  std::vector<PendingOp> pending_;
  int64_t remaining_ = -1;  // -1: no limit
  int64_t ops_ = 0;
  bool torn_ = false;
  std::map<FaultOp, Fault> faults_;  // pending injected failures per kind (count != 0)
  int64_t injected_ = 0;
  std::map<std::string, int64_t> write_backs_;
  Hook hook_;
};

}  // namespace strata::storage::testing
