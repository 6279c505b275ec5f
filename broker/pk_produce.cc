#include "broker/pk_produce.h"

#include <spdlog/spdlog.h>

#include "broker/broker.h"
#include "broker/metrics/broker_metrics.h"  // issue 6
#include "broker/pk_tables.h"

namespace strata::broker {

using protocol::ErrorCode;

PkAppendResult pk_append(Broker& broker, const TopicEntry& topic, int32_t partition,
                         storage::PartitionLog& log, std::span<const uint8_t> batch,
                         int64_t now_ms) {
  PkAppendResult out;
  auto state_or = broker.pk_tables().get(topic, partition);
  if (!state_or.ok()) {
    out.error = state_or.status().code() == Errc::not_found ? ErrorCode::unknown_topic_or_partition
                                                            : ErrorCode::kafka_storage_error;
    out.message = state_or.status().message();
    return out;
  }
  pkindex::PkState* state = state_or->get();
  if (!state) return out;  // a log topic

  protocol::RecordBatchView input(batch);
  auto lock = state->lock_writes();
  pkindex::ComputeResult computed = state->compute(input, input.compression());
  if (!computed.status.ok()) {
    switch (computed.status.code()) {
      case Errc::invalid_argument: out.error = ErrorCode::invalid_record; break;
      case Errc::corruption: out.error = ErrorCode::corrupt_message; break;
      default: out.error = ErrorCode::kafka_storage_error; break;
    }
    out.message = computed.status.message();
    out.record_errors = std::move(computed.record_errors);
    return out;
  }
  if (computed.batch.size() > static_cast<size_t>(topic.config.max_message_bytes)) {
    state->rollback(computed.pending_id);
    out.error = ErrorCode::message_too_large;
    out.message = "the changelog batch (" + std::to_string(computed.batch.size()) +
                  " bytes) exceeds max.message.bytes";
    return out;
  }
  auto appended = log.append(computed.batch, now_ms);
  if (!appended.ok() || appended->producer_check != storage::ProducerCheck::ok) {
    // Nothing was appended (an I/O error, or an idempotent duplicate / out-of-order / stale
    // epoch verdict): the state must not see this batch.
    state->rollback(computed.pending_id);
    out.appended = std::move(appended);
    return out;
  }
  Status st = state->apply(computed.pending_id, appended->base_offset);
  if (!st.ok()) {
    spdlog::error("apply to {}-{} failed: {}", topic.name, partition, st.to_string());
    out.error = ErrorCode::kafka_storage_error;
    out.message = st.message();
    return out;
  }
  // issue 6: rows applied (records of the changelog batch, one per key written).
  topic.counters->pk_rows_applied.fetch_add(
      static_cast<uint64_t>(protocol::RecordBatchView(computed.batch).record_count()),
      std::memory_order_relaxed);
  out.appended = std::move(appended);
  return out;
}

}  // namespace strata::broker
