// OffsetForLeaderEpoch (23), v2-4: for each partition, the end offset of the requested leader
// epoch from the leader-epoch checkpoint (the start of the next epoch, or the log end for the
// current one) and the largest epoch <= the requested one; -1/-1 for an unknown (future) epoch.
// current_leader_epoch is checked like Fetch does (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH).
#include "protocol/messages/offset_for_leader_epoch.h"

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/partition_loop.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void offset_for_leader_epoch(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::OffsetForLeaderEpochRequest req;
  req.decode(body, ctx.version);
  protocol::OffsetForLeaderEpochResponse resp;
  protocol::OffsetForLeaderEpochResponse::EpochEndOffset blank;
  blank.leader_epoch = -1;
  blank.end_offset = -1;
  // Kafka: replicas hold CLUSTER_ACTION (not logged when missing); anyone else needs DESCRIBE on
  // each topic (consumers detecting truncation).
  const bool replica =
      may(ctx, AclOperation::cluster_action, ResourceType::cluster, security::kClusterName);
  answer_partitions(
      ctx.svc.topics, req.topics, resp.topics, blank,
      [&](const std::string& t) {
        return replica || authorize_topic(ctx, AclOperation::describe, t);
      },
      [&](const auto& rt, const auto& rp, auto& pout, storage::PartitionLog& log) {
        if (ctx.svc.cluster) {  // answered by the leader only
          const ErrorCode e =
              ctx.svc.cluster->leader_check(rt.topic, rp.partition, rp.current_leader_epoch);
          if (e != ErrorCode::none) return e;
        }
        const int32_t epoch = log.leader_epoch();
        if (rp.current_leader_epoch >= 0 && rp.current_leader_epoch != epoch) {
          return rp.current_leader_epoch < epoch ? ErrorCode::fenced_leader_epoch
                                                 : ErrorCode::unknown_leader_epoch;
        }
        auto [e, end] = log.end_offset_for_epoch(rp.leader_epoch);
        pout.leader_epoch = e;
        pout.end_offset = end;
        return ErrorCode::none;
      });
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
