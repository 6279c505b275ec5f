// OffsetForLeaderEpoch (23), v2-4: for each partition, the end offset of the requested leader
// epoch from the leader-epoch checkpoint (the start of the next epoch, or the log end for the
// current one) and the largest epoch <= the requested one; -1/-1 for an unknown (future) epoch.
// current_leader_epoch is checked like Fetch does (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
#include "protocol/messages/offset_for_leader_epoch.h"

#include "broker/handlers/handlers.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void offset_for_leader_epoch(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::OffsetForLeaderEpochRequest req;
  req.decode(body, ctx.version);
  protocol::OffsetForLeaderEpochResponse resp;
  for (const auto& rt : req.topics) {
    auto topic = ctx.svc.topics.find(rt.topic);
    auto& tout = resp.topics.emplace_back();
    tout.topic = rt.topic;
    for (const auto& rp : rt.partitions) {
      auto& pout = tout.partitions.emplace_back();
      pout.partition = rp.partition;
      pout.leader_epoch = -1;
      pout.end_offset = -1;
      storage::PartitionLog* log = topic ? topic->partition(rp.partition) : nullptr;
      if (!log) {
        pout.error_code = static_cast<int16_t>(ErrorCode::unknown_topic_or_partition);
        continue;
      }
      const int32_t epoch = log->leader_epoch();
      if (rp.current_leader_epoch >= 0 && rp.current_leader_epoch != epoch) {
        pout.error_code =
            static_cast<int16_t>(rp.current_leader_epoch < epoch ? ErrorCode::fenced_leader_epoch
                                                                 : ErrorCode::unknown_leader_epoch);
        continue;
      }
      auto [e, end] = log->end_offset_for_epoch(rp.leader_epoch);
      pout.leader_epoch = e;
      pout.end_offset = end;
      pout.error_code = 0;
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
