// The broker's file-descriptor budget for partitions: what a partition holds for good, estimated
// from its segments and kind, against the RLIMIT_NOFILE soft limit (after main raised it) minus a
// reserve for connections and the broker's other files (open.files.reserved). TopicRegistry
// refuses a CreateTopics / CreatePartitions that would pass it (POLICY_VIOLATION), so a request
// cannot make the broker run out of descriptors later, in a segment roll or an accept.
// Pure arithmetic, but for open_files_limit(); any thread.
#pragma once

#include <cstdint>

#include "protocol/base/result.h"

namespace strata::broker {

// Every segment keeps its .log open for reads; the active one also holds its writer, .index and
// .timeindex (storage/segment.cc).
inline constexpr int64_t kActiveSegmentExtraFds = 3;
// A PK partition's RocksDB beyond its table cache (max_open_files): LOCK, LOG, MANIFEST, the WAL,
// the directory, and the outputs of a running flush or compaction.
inline constexpr int64_t kPkFixedFds = 8;

// Descriptors one partition holds with `segments` segments (at least one, the active one); a PK
// partition adds its RocksDB's `pk_max_open_files` table files and kPkFixedFds.
int64_t partition_fd_estimate(int64_t segments, bool pk, int64_t pk_max_open_files);

// The soft RLIMIT_NOFILE of this process; INT64_MAX when unlimited or unknown.
int64_t open_files_limit();

// Descriptors partitions may hold under `limit`: limit minus the reserve, where the reserve is
// `reserved` but at most half the limit (so a broker under a small limit still creates a few
// topics instead of none). Never negative.
int64_t partition_fd_budget(int64_t limit, int64_t reserved);

// Errc::too_large when partitions estimated at `current` descriptors plus `adding` more would
// pass partition_fd_budget(limit, reserved); the message gives the numbers and what to change.
Status check_fd_budget(int64_t current, int64_t adding, int64_t limit, int64_t reserved);

}  // namespace strata::broker
