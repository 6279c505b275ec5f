// WriteTxnMarkers (27) v0-1: COMMIT/ABORT markers for (producer id, epoch) written to the named
// partitions of this broker's logs (PartitionLog::append_marker). Kafka's coordinator sends it to
// partition leaders; here the single node's coordinator writes its markers directly, and the
// request serves operators aborting a hanging transaction (kafka-transactions.sh abort, `strata
// txn abort`): a transaction open on a partition that no coordinator will end. CLUSTER_ACTION on
// the cluster, else CLUSTER_AUTHORIZATION_FAILED for every partition. Per partition:
// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (cluster mode, not the leader),
// INVALID_PRODUCER_EPOCH for an epoch below the producer's current one (nothing written),
// KAFKA_STORAGE_ERROR. On a primary-key table the marker goes through the partition's state, which
// applies (COMMIT) or drops (ABORT) the transaction's rows with it. Answered once the marker is in
// the leader's log. The coordinator epoch is written into the marker, not checked (no
// TRANSACTION_COORDINATOR_FENCED).
#include "protocol/messages/write_txn_markers.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;

ErrorCode write_one(RequestContext& ctx,
                    const protocol::WriteTxnMarkersRequest::WritableTxnMarker& m,
                    const std::string& topic_name, int32_t partition) {
  auto topic = ctx.svc.topics.find(topic_name);
  storage::PartitionLog* log = topic ? topic->partition(partition) : nullptr;
  if (!log) return ErrorCode::unknown_topic_or_partition;
  if (ctx.svc.cluster) {
    const ErrorCode e = ctx.svc.cluster->leader_check(topic_name, partition, -1);
    if (e != ErrorCode::none) return e;
  }
  auto r = ctx.svc.pk_tables.append_marker(*topic, partition, *log, m.producer_id, m.producer_epoch,
                                           m.coordinator_epoch, m.transaction_result, now_ms());
  if (!r.ok()) {
    if (r.status().code() == Errc::not_found) return ErrorCode::unknown_topic_or_partition;
    spdlog::error("WriteTxnMarkers {}-{} producer {}: {}", topic_name, partition, m.producer_id,
                  r.status().to_string());
    return ErrorCode::kafka_storage_error;
  }
  if (r->producer_check == storage::ProducerCheck::stale_epoch) {
    return ErrorCode::invalid_producer_epoch;
  }
  spdlog::info("WriteTxnMarkers: {} marker of producer {} epoch {} written to {}-{} by {}",
               m.transaction_result ? "COMMIT" : "ABORT", m.producer_id, m.producer_epoch,
               topic_name, partition, ctx.principal());
  return ErrorCode::none;
}
}  // namespace

void write_txn_markers(RequestContext& ctx, protocol::Reader& body) {
  protocol::WriteTxnMarkersRequest req;
  req.decode(body, ctx.version);
  protocol::WriteTxnMarkersResponse resp;
  const bool allowed = authorize_cluster(ctx, AclOperation::cluster_action);
  for (const auto& m : req.markers) {
    auto& mout = resp.markers.emplace_back();
    mout.producer_id = m.producer_id;
    for (const auto& t : m.topics) {
      auto& tout = mout.topics.emplace_back();
      tout.name = t.name;
      for (int32_t p : t.partition_indexes) {
        auto& pout = tout.partitions.emplace_back();
        pout.partition_index = p;
        pout.error_code =
            allowed ? write_one(ctx, m, t.name, p) : ErrorCode::cluster_authorization_failed;
        if (pout.error_code != ErrorCode::none) {
          ctx.svc.metrics.request_error(ctx.api_key, pout.error_code);
        }
      }
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
