// Retention: Kafka's deleteOldSegments for one partition log. Deletes whole segments, oldest first,
// that are past `retention.ms` (now - the segment's largest timestamp > retention.ms), past
// `retention.bytes` (the log is larger than the limit by at least the segment's size), or entirely
// below the log start offset (DeleteRecords moved it). Only segments that end at or below
// min(high watermark, the owner's retention_bound()) are candidates, and deletion stops at the
// first segment that is not deletable. If every segment including the non-empty active one
// qualifies, the active segment is rolled first and then deleted (the log keeps an empty active
// segment). The log start offset moves to the first remaining segment's base offset (never
// backwards); open() derives it from the first segment (and the persisted log-start-offset), so
// nothing more is written.
//
// Crash safety: the segments leave the in-memory list first, then their files are removed .log
// first, then .index and .timeindex. A crash in between leaves either whole segments (deleted again
// at the next check) or index files without a .log (removed at open by recover_segment_swaps).
//
// Stateless. Called from the broker's retention thread; safe against concurrent appends, reads,
// DeleteRecords and the cleaner (serialised by PartitionLog::maintenance_mu_).
#pragma once

#include <cstdint>

#include "protocol/base/result.h"
#include "storage/partition_log.h"

namespace strata::storage {

struct RetentionPolicy {
  bool delete_enabled = true;    // cleanup.policy contains "delete"
  int64_t retention_ms = -1;     // -1 = unlimited
  int64_t retention_bytes = -1;  // -1 = unlimited
};

struct RetentionOutcome {
  int deleted_segments = 0;
  int64_t deleted_bytes = 0;
  bool rolled_active = false;
  int64_t log_start_offset = 0;
};

class Retention {
 public:
  static Result<RetentionOutcome> enforce(PartitionLog& log, const RetentionPolicy& policy,
                                          int64_t now_ms);
};

}  // namespace strata::storage
