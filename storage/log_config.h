// LogConfig: per-partition log tunables, named after Kafka's topic/broker keys
// (segment.bytes, segment.ms, flush.messages, flush.ms, index.interval.bytes, segment.index.bytes).
// Plain value type, copied into each PartitionLog at open; thread-compatible.
#pragma once

#include <cstdint>
#include <limits>

namespace strata::storage {

struct LogConfig {
  int64_t segment_bytes = 1073741824;  // log.segment.bytes
  int64_t segment_ms = 604800000;      // log.roll.ms
  int64_t flush_interval_messages =
      std::numeric_limits<int64_t>::max();                          // log.flush.interval.messages
  int64_t flush_interval_ms = std::numeric_limits<int64_t>::max();  // log.flush.interval.ms
  int32_t index_interval_bytes = 4096;                              // log.index.interval.bytes
  int32_t max_index_bytes = 10485760;                               // log.index.size.max.bytes
  // Cluster mode (a replica of a replicated partition), read once at open and kept for the log's
  // life (set_config cannot change it): no leader-epoch bump at open, leader appends only after
  // become_leader(), and the high watermark is set from outside (advance_high_watermark) instead
  // of following the durable end. false = one node, as before.
  bool replicated = false;
};

}  // namespace strata::storage
