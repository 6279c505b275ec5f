// FaultInjectionFs: a test rocksdb::FileSystem over the POSIX one that simulates power loss and
// disk errors for primary-key state, as storage's FaultInjectionEnv does for the log. Handed to
// PkEnvironment::Options::file_system, it sees every file of kv/ (SSTs, MANIFEST, CURRENT, OPTIONS,
// IDENTITY) and the checkpoint/restore directory moves of pk_checkpoint.cc.
//
// The model (the one LevelDB's and RocksDB's own fault tests use): file contents are durable up to
// the last Sync/Fsync of the file; a directory entry change — a file or directory created, a hard
// link, a rename, a removal — is durable once the directory holding the entry is fsynced (both
// directories for a rename). Removals are really renames into a trash directory until they are
// durable, so a power loss can bring the file back with its synced content.
//
//   drop_unsynced_data()  power loss: undoes the entry changes not yet durable, newest first, then
//                         cuts every file written through this FS back to its synced size. Files
//                         that existed before this FS touched them count as fully synced. Close
//                         every DB using this FS first.
//   inject(op, fault)     the next fault.count operations of a kind on paths containing
//                         fault.path_part fail: write (Append) with ENOSPC -> IOStatus::NoSpace,
//                         anything else -> IOError; sync (Sync/Fsync of a file or a directory)
//                         always IOError and syncs nothing; open (new writable files).
//                         count -1 = until clear_faults().
//
// Test-only. Thread-safe: RocksDB calls it from its background threads.
#pragma once

#include <rocksdb/file_system.h>

#include <cerrno>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::pkindex::testing {

enum class FsOp { write, sync, open };

struct FsFault {
  int err = EIO;
  int64_t count = 1;      // operations that fail; -1 = all until clear_faults()
  std::string path_part;  // only paths containing this ("" = any)
};

class FaultInjectionFs final : public rocksdb::FileSystemWrapper {
 public:
  // `trash_dir`: an empty directory on the same file system as the data (removals are renamed
  // into it until they are durable).
  explicit FaultInjectionFs(std::string trash_dir);

  static const char* kClassName() { return "StrataFaultInjectionFs"; }
  const char* Name() const override { return kClassName(); }

  Status drop_unsynced_data();
  void inject(FsOp op, FsFault fault);
  void clear_faults();
  int64_t injected_count() const;
  // Directory entry changes not yet durable (for tests of the model itself).
  size_t pending_count() const;

  // FileSystem
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomRWFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& io,
                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& io,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteDir(const std::string& d, const rocksdb::IOOptions& io,
                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& io,
                              rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus CreateDirIfMissing(const std::string& d, const rocksdb::IOOptions& io,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& s, const std::string& t,
                               const rocksdb::IOOptions& io, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& s, const std::string& t,
                             const rocksdb::IOOptions& io, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Truncate(const std::string& f, size_t size, const rocksdb::IOOptions& io,
                             rocksdb::IODebugContext* dbg) override;

  // Used by the file wrappers.
  rocksdb::IOStatus take_fault(FsOp op, const std::string& path);
  void on_synced(const std::string& path, uint64_t size);
  void on_dir_synced(const std::string& dir);

 private:
  struct Pending {
    enum Kind { create, remove, rename } kind;
    std::string path;              // created / removed path, or rename target
    std::string from;              // rename source
    std::string trash;             // where a removed entry, or the entry a rename replaced, waits
    bool dir_synced = false;       // the directory of `path`
    bool from_dir_synced = false;  // rename: the directory of `from`
  };
  std::string trash_name();
  // Moves the tracked sizes of `from` (a file, or every file under a directory) to `to`.
  void rekey(const std::string& from, const std::string& to);
  void finish(const Pending& p);  // durable: a removal's trash goes for good

  std::string trash_dir_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> synced_;  // path -> durable size, for files written here
  std::vector<Pending> pending_;
  std::map<FsOp, FsFault> faults_;
  int64_t injected_ = 0;
  uint64_t trash_seq_ = 0;
};

}  // namespace strata::pkindex::testing
