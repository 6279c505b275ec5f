// The Produce path of primary-key tables (issue 5; docs/pk-tables.md): under the partition's write
// lock, compute the output batch (pkindex::PkState::compute), check it against max.message.bytes,
// append it, then apply it — or roll the overlay back when the append failed or was an
// idempotent-producer duplicate / rejection (nothing appended). Chooses the Kafka error codes for
// PK rejections. Called by handlers::produce on the connection's strand; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pkindex/pk_state.h"
#include "protocol/base/result.h"
#include "protocol/wire/errors.h"
#include "storage/partition_log.h"

namespace strata::broker {

class Broker;
struct TopicEntry;

struct PkAppendResult {
  protocol::ErrorCode error = protocol::ErrorCode::none;  // a PK rejection (nothing appended)
  std::string message;
  std::vector<pkindex::RecordError> record_errors;  // -> ProduceResponse record_errors
  // Set when the topic is a PK table and the output batch went to PartitionLog::append: the
  // append's own result (including idempotent-producer verdicts), for the caller to answer.
  std::optional<Result<storage::PartitionLog::AppendInfo>> appended;
};

// For a log topic: returns an empty result (appended unset) and does nothing.
PkAppendResult pk_append(Broker& broker, const TopicEntry& topic, int32_t partition,
                         storage::PartitionLog& log, std::span<const uint8_t> batch,
                         int64_t now_ms);

}  // namespace strata::broker
