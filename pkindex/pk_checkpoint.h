// On-disk layout of primary-key state checkpoints:
//   <partition dir>/kv-checkpoints/<20-digit applied offset>/   a RocksDB checkpoint (SSTs
//                                                                hard-linked)
//   <partition dir>/kv-checkpoints/<name>.tmp/                   being created (removed at open)
//   <partition dir>/kv.restore/                                  kv being rebuilt from a
//                                                                checkpoint (removed at open)
// A checkpoint becomes visible by renaming its tmp dir and fsyncing kv-checkpoints/, so one that
// exists under its final name is complete. PkState (pk_checkpoint.cc) creates, lists and restores
// them. Pure file-system helpers; any thread, but one writer per partition directory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"

namespace rocksdb {
class FileSystem;
}

namespace strata::pkindex::checkpoint {

std::string dir_of(const std::string& partition_dir);  // <partition dir>/kv-checkpoints
std::string name_of(int64_t offset);                   // 20 digits, zero-padded
// Offsets of complete checkpoints, ascending (a missing directory = none).
Result<std::vector<int64_t>> list(const std::string& partition_dir);
// Removes `*.tmp` checkpoint dirs and a leftover kv.restore/ or kv.old/ (through `fs`, the
// PkEnvironment's file system, as restore() below).
Status remove_leftovers(rocksdb::FileSystem& fs, const std::string& partition_dir);
// Milliseconds since the epoch of the checkpoint's directory mtime (-1 when unknown).
int64_t created_ms(const std::string& partition_dir, int64_t offset);
// Replaces <partition dir>/kv with a copy of checkpoint `offset` (SSTs hard-linked, other files
// copied and fsynced; built in kv.restore then renamed over kv, parent fsynced).
Status restore(rocksdb::FileSystem& fs, const std::string& partition_dir, int64_t offset);
// fsync of a file or directory.
Status fsync_path(const std::string& path);

// Copying a checkpoint to a new replica (pk_checkpoint_copy.cc). The source side lists and reads a
// complete checkpoint; the destination builds `<offset>.tmp/` (removed at open if left behind)
// and renames it to its final name once every file is written and fsynced.
struct FileInfo {
  std::string name;
  int64_t size = 0;
};
// The plain files of complete checkpoint `offset`, by name. not_found when it is gone (older
// checkpoints are removed as newer ones are taken).
Result<std::vector<FileInfo>> files(const std::string& partition_dir, int64_t offset);
// Up to `max_bytes` of file `name` of checkpoint `offset` from `position` (empty at its end).
// invalid_argument for a name that is not a plain file name; not_found when it is gone.
Result<std::string> read_chunk(const std::string& partition_dir, int64_t offset,
                               const std::string& name, int64_t position, int32_t max_bytes);
// Starts an empty `<offset>.tmp/` (replacing a leftover one).
Status install_begin(const std::string& partition_dir, int64_t offset);
// Appends `data` to file `name` of the checkpoint being installed.
Status install_append(const std::string& partition_dir, int64_t offset, const std::string& name,
                      std::string_view data);
// fsyncs the files and the directory, renames it to its final name, fsyncs kv-checkpoints/.
Status install_commit(const std::string& partition_dir, int64_t offset);

}  // namespace strata::pkindex::checkpoint
