// Small whole-file helpers over Env: atomic replace (tmp + fsync + rename + dir fsync) and
// read-into-string. Used for checkpoints and metadata files (leader-epoch-checkpoint,
// recovery-point, partition.metadata, meta.properties, topic metadata). Stateless; callable from
// any thread, but two writers of the same path must be serialised by the caller.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

// Writes `data` to `path` so that after a crash the file holds either the old or the new content:
// writes path + ".tmp", fsyncs it, renames it over `path`, then fsyncs the parent directory.
Status write_file_atomically(Env* env, const std::string& path, std::string_view data);

// Reads the whole file. Errc::not_found if it does not exist.
Result<std::string> read_file_to_string(Env* env, const std::string& path);

// The lines of a small text store rewritten whole with write_file_atomically (ACLs, SCRAM
// credentials, client quotas): an absent file has none; empty lines and '#' comments are skipped.
Result<std::vector<std::string>> read_line_file(Env* env, const std::string& path);

// "a/b/c" -> "a/b" ("." when there is no slash).
std::string parent_dir(const std::string& path);

// Joins two path components with one '/'.
std::string join_path(const std::string& dir, std::string_view name);

}  // namespace strata::storage
