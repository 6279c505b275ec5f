// The few directory operations of primary-key state (checkpoint, restore, rebuild), done through
// the RocksDB FileSystem of the PkEnvironment so that they and RocksDB's own files share one seam:
// a test's fault-injecting file system then sees every creation, rename, removal and fsync under
// a partition's kv*/ paths, and a simulated power loss undoes exactly what was never made durable.
// Errors come back as Errc::io_error (Errc::no_space for ENOSPC) naming the path.
#pragma once

#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace rocksdb {
class FileSystem;
}

namespace strata::pkindex::files {

bool exists(rocksdb::FileSystem& fs, const std::string& path);
// Entry names of a directory (a missing directory = none).
Result<std::vector<std::string>> children(rocksdb::FileSystem& fs, const std::string& dir);
// One level, like mkdir; an existing directory is fine.
Status create_dir(rocksdb::FileSystem& fs, const std::string& dir);
// A file or a whole directory tree; a missing path is fine. Durable after sync_dir(parent).
Status remove_all(rocksdb::FileSystem& fs, const std::string& path);
// rename(2) of a file or directory. Durable after sync_dir of both parents.
Status rename(rocksdb::FileSystem& fs, const std::string& from, const std::string& to);
// fsync of a directory: makes the creations, renames and removals of its entries durable.
Status sync_dir(rocksdb::FileSystem& fs, const std::string& dir);
// `to` = a copy of `from`, fsynced; with `link` a hard link where the file system allows one (for
// immutable files only: both names share the content).
Status copy_file(rocksdb::FileSystem& fs, const std::string& from, const std::string& to,
                 bool link);

}  // namespace strata::pkindex::files
