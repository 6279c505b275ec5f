// DescribeProducers (61) v0: the active producers of each partition's log — what an operator needs
// to find a hanging transaction (one whose first offset holds the last stable offset) and abort it
// with WriteTxnMarkers. READ on the topic (else TOPIC_AUTHORIZATION_FAILED for its partitions);
// answered by the partition's leader (NOT_LEADER_OR_FOLLOWER elsewhere in cluster mode), with the
// coordinator epoch of each producer's last marker (-1: none yet).
#include "protocol/messages/describe_producers.h"

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"

namespace strata::broker::handlers {

void describe_producers(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::DescribeProducersRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeProducersResponse resp;
  for (const auto& rt : req.topics) {
    const bool allowed = authorize_topic(ctx, AclOperation::read, rt.name);
    auto topic = allowed ? ctx.svc.topics.find(rt.name) : nullptr;
    auto& tout = resp.topics.emplace_back();
    tout.name = rt.name;
    for (int32_t p : rt.partition_indexes) {
      auto& pout = tout.partitions.emplace_back();
      pout.partition_index = p;
      storage::PartitionLog* log = topic ? topic->partition(p) : nullptr;
      if (!allowed) {
        pout.error_code = ErrorCode::topic_authorization_failed;
      } else if (!log) {
        pout.error_code = ErrorCode::unknown_topic_or_partition;
      } else if (ctx.svc.cluster) {
        pout.error_code = ctx.svc.cluster->leader_check(rt.name, p, -1);
      }
      if (pout.error_code != ErrorCode::none) {
        ctx.svc.metrics.request_error(ctx.api_key, pout.error_code);
        continue;
      }
      for (const auto& e : log->producer_states()) {
        auto& s = pout.active_producers.emplace_back();
        s.producer_id = e.producer_id;
        s.producer_epoch = e.epoch;
        const storage::ProducerBatchMeta* last = e.last();
        s.last_sequence = last ? last->last_seq : -1;
        s.last_timestamp = e.last_timestamp;
        s.coordinator_epoch = e.coordinator_epoch;
        s.current_txn_start_offset = e.txn_first_offset;
      }
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
