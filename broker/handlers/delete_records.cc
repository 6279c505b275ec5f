// DeleteRecords (21), v0-2: moves each partition's log start offset (durably; PartitionLog::
// delete_records_before) so later fetches below it get OFFSET_OUT_OF_RANGE and ListOffsets
// earliest reports it. offset -1 = the high watermark. An offset beyond the high watermark (or
// negative) → OFFSET_OUT_OF_RANGE with nothing changed. The partition owner's retention bound (PK
// tables) caps the move; low_watermark reports where the log start really is.
#include "protocol/messages/delete_records.h"

#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/handlers/partition_loop.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int64_t kHighWatermark = -1;

// Kafka's code for a failed PartitionLog::delete_records_before.
ErrorCode delete_records_error(const std::string& topic, int32_t partition, const Status& st) {
  switch (st.code()) {
    case Errc::out_of_range:
      return ErrorCode::offset_out_of_range;
    case Errc::not_found:
      return ErrorCode::unknown_topic_or_partition;  // deleted meanwhile
    default:
      spdlog::error("DeleteRecords {}-{}: {}", topic, partition, st.to_string());
      return ErrorCode::kafka_storage_error;
  }
}
}  // namespace

void delete_records(RequestContext& ctx, protocol::Reader& body) {
  protocol::DeleteRecordsRequest req;
  req.decode(body, ctx.version);
  protocol::DeleteRecordsResponse resp;
  protocol::DeleteRecordsResponse::PartitionResult blank;
  blank.low_watermark = -1;
  answer_partitions(
      ctx.svc.topics, req.topics, resp.topics, blank,
      [&](const std::string& t) { return authorize_topic(ctx, AclOperation::del, t); },
      [&](const auto& rt, const auto& rp, auto& pout, storage::PartitionLog& log) {
        const int64_t offset = rp.offset == kHighWatermark ? log.high_watermark() : rp.offset;
        auto moved = log.delete_records_before(offset);
        if (!moved.ok()) {
          return delete_records_error(rt.name, rp.partition_index, moved.status());
        }
        pout.low_watermark = *moved;
        return ErrorCode::none;
      });
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
