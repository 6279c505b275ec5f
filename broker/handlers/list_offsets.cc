// ListOffsets (2), v1-7: earliest (-2) = log start, latest (-1) = high watermark (= last stable
// offset: no transactions), max timestamp (-3, v7), else the first offset whose record timestamp
// is >= the target, searching inside batches; none → offset -1 / timestamp -1. v4+ reports the
// leader epoch of the returned offset and validates current_leader_epoch.
#include "protocol/messages/list_offsets.h"

#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int64_t kLatest = -1;
constexpr int64_t kEarliest = -2;
constexpr int64_t kMaxTimestamp = -3;
}  // namespace

void list_offsets(RequestContext& ctx, protocol::Reader& body) {
  protocol::ListOffsetsRequest req;
  req.decode(body, ctx.version);
  protocol::ListOffsetsResponse resp;
  for (const auto& rt : req.topics) {
    auto topic = ctx.svc.topics.find(rt.name);
    auto& tout = resp.topics.emplace_back();
    tout.name = rt.name;
    for (const auto& rp : rt.partitions) {
      auto& pout = tout.partitions.emplace_back();
      pout.partition_index = rp.partition_index;
      pout.timestamp = -1;
      pout.offset = -1;
      pout.leader_epoch = -1;
      storage::PartitionLog* log = topic ? topic->partition(rp.partition_index) : nullptr;
      if (!log) {
        pout.error_code = static_cast<int16_t>(ErrorCode::unknown_topic_or_partition);
        continue;
      }
      const int32_t epoch = log->leader_epoch();
      if (ctx.version >= 4 && rp.current_leader_epoch >= 0 && rp.current_leader_epoch != epoch) {
        pout.error_code =
            static_cast<int16_t>(rp.current_leader_epoch < epoch ? ErrorCode::fenced_leader_epoch
                                                                 : ErrorCode::unknown_leader_epoch);
        continue;
      }
      auto epoch_of = [&](int64_t offset) { return log->epoch_for_offset(offset).value_or(epoch); };
      if (rp.timestamp == kLatest) {
        pout.offset = log->high_watermark();
        pout.leader_epoch = epoch;
      } else if (rp.timestamp == kEarliest) {
        pout.offset = log->log_start_offset();
        pout.leader_epoch = epoch_of(pout.offset);
      } else if (rp.timestamp == kMaxTimestamp || rp.timestamp >= 0) {
        auto found = rp.timestamp == kMaxTimestamp ? log->max_timestamp()
                                                   : log->offset_for_timestamp(rp.timestamp);
        if (!found.ok()) {
          spdlog::error("ListOffsets {}-{}: {}", rt.name, rp.partition_index,
                        found.status().to_string());
          pout.error_code = static_cast<int16_t>(ErrorCode::kafka_storage_error);
          continue;
        }
        if (found->has_value()) {
          pout.offset = (*found)->offset;
          pout.timestamp = (*found)->timestamp;
          pout.leader_epoch = (*found)->leader_epoch;
        }
      } else {
        pout.error_code = static_cast<int16_t>(ErrorCode::invalid_request);
        continue;
      }
      pout.error_code = 0;
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
