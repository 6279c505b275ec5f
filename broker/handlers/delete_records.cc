// DeleteRecords (21), v0-2: moves each partition's log start offset (durably; PartitionLog::
// delete_records_before) so later fetches below it get OFFSET_OUT_OF_RANGE and ListOffsets
// earliest reports it. offset -1 = the high watermark. An offset beyond the high watermark (or
// negative) → OFFSET_OUT_OF_RANGE with nothing changed. The partition owner's retention bound (PK
// tables) caps the move; low_watermark reports where the log start really is.
#include "protocol/messages/delete_records.h"

#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void delete_records(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  constexpr int64_t kHighWatermark = -1;
  protocol::DeleteRecordsRequest req;
  req.decode(body, ctx.version);
  protocol::DeleteRecordsResponse resp;
  for (const auto& rt : req.topics) {
    auto topic = ctx.svc.topics.find(rt.name);
    auto& tout = resp.topics.emplace_back();
    tout.name = rt.name;
    for (const auto& rp : rt.partitions) {
      auto& pout = tout.partitions.emplace_back();
      pout.partition_index = rp.partition_index;
      pout.low_watermark = -1;
      storage::PartitionLog* log = topic ? topic->partition(rp.partition_index) : nullptr;
      if (!log) {
        pout.error_code = static_cast<int16_t>(ErrorCode::unknown_topic_or_partition);
        continue;
      }
      const int64_t offset = rp.offset == kHighWatermark ? log->high_watermark() : rp.offset;
      auto moved = log->delete_records_before(offset);
      if (!moved.ok()) {
        const auto& st = moved.status();
        if (st.code() == Errc::out_of_range) {
          pout.error_code = static_cast<int16_t>(ErrorCode::offset_out_of_range);
        } else if (st.code() == Errc::not_found) {
          pout.error_code = static_cast<int16_t>(ErrorCode::unknown_topic_or_partition);
        } else {
          spdlog::error("DeleteRecords {}-{}: {}", rt.name, rp.partition_index, st.to_string());
          pout.error_code = static_cast<int16_t>(ErrorCode::kafka_storage_error);
        }
        continue;
      }
      pout.low_watermark = *moved;
      pout.error_code = 0;
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
