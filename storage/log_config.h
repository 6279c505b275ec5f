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
};

}  // namespace strata::storage
