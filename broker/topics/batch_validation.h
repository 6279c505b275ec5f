// Produce-side checks and rewrites of one incoming record batch, in the order a Java broker
// applies them (LogValidator): size, magic, length and CRC, codec, record structure; then the
// topic's compression.type (recompress) and message.timestamp.type (LogAppendTime). The Kafka error
// code for a rejection is chosen here. Pure function over the caller's buffer; any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "broker/config/topic_config.h"
#include "protocol/wire/errors.h"

namespace strata::broker {

struct PreparedBatch {
  protocol::ErrorCode error = protocol::ErrorCode::none;
  std::string message;           // for error_message / logs when error != none
  std::span<uint8_t> batch;      // what to append: the request's bytes or `owned`
  std::vector<uint8_t> owned;    // the recompressed batch, when the topic's codec differs
  int64_t log_append_time = -1;  // set when the topic uses LogAppendTime
  int32_t record_count = 0;
};

// `records` is the partition's records field (empty for a null or empty one) (mutable:
// LogAppendTime rewrites it in place).
PreparedBatch prepare_batch(std::span<uint8_t> records, const TopicConfig& topic,
                            int16_t produce_version, int64_t now_ms);

}  // namespace strata::broker
