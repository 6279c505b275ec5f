// On-disk layout of primary-key state checkpoints:
//   <partition dir>/kv-checkpoints/<20-digit applied offset>/   a RocksDB checkpoint (SSTs
//   hard-linked) <partition dir>/kv-checkpoints/<name>.tmp/                   being created
//   (removed at open) <partition dir>/kv.restore/                                  kv being rebuilt
//   from a checkpoint
//                                                                (removed at open)
// A checkpoint becomes visible by renaming its tmp dir and fsyncing kv-checkpoints/, so one that
// exists under its final name is complete. PkState (pk_checkpoint.cc) creates, lists and restores
// them. Pure file-system helpers; any thread, but one writer per partition directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::pkindex::checkpoint {

std::string dir_of(const std::string& partition_dir);  // <partition dir>/kv-checkpoints
std::string name_of(int64_t offset);                   // 20 digits, zero-padded
// Offsets of complete checkpoints, ascending (a missing directory = none).
Result<std::vector<int64_t>> list(const std::string& partition_dir);
// Removes `*.tmp` checkpoint dirs and a leftover kv.restore/.
Status remove_leftovers(const std::string& partition_dir);
// Milliseconds since the epoch of the checkpoint's directory mtime (-1 when unknown).
int64_t created_ms(const std::string& partition_dir, int64_t offset);
// Replaces <partition dir>/kv with a copy of checkpoint `offset` (SSTs hard-linked, other files
// copied and fsynced; built in kv.restore then renamed over kv, parent fsynced).
Status restore(const std::string& partition_dir, int64_t offset);
// fsync of a file or directory.
Status fsync_path(const std::string& path);

}  // namespace strata::pkindex::checkpoint
