// WriteTxnMarkers (27) v0-1: COMMIT/ABORT markers for (producer id, epoch) written to the named
// partitions of this broker's logs (PartitionLog::append_marker). A cluster's transaction
// coordinators send it to partition leaders (this broker included); a single node's coordinator
// writes its markers directly, and the request serves operators aborting a hanging transaction
// (kafka-transactions.sh abort, `strata txn abort`): a transaction open on a partition that no
// coordinator will end. CLUSTER_ACTION on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every
// partition. Per partition: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER (cluster mode, not
// the leader), INVALID_PRODUCER_EPOCH for an epoch below the producer's current one (nothing
// written), KAFKA_STORAGE_ERROR. On a primary-key table the marker goes through the partition's
// state, which applies (COMMIT) or drops (ABORT) the transaction's rows with it. Answered once the
// marker is in the leader's log — in a cluster once the high watermark passed it in the same
// leader term, as Kafka appends markers with acks=all (else NOT_LEADER_OR_FOLLOWER, or
// REQUEST_TIMED_OUT after 10 s): a coordinator that completes a transaction must not lose a marker
// to a leader change. A coordinator epoch below the one of the producer's last marker on the
// partition is TRANSACTION_COORDINATOR_FENCED (a deposed coordinator; nothing written).
#include "protocol/messages/write_txn_markers.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/long_poll.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;

// A marker written in cluster mode, answered once replicated.
struct AwaitedMarker {
  size_t marker = 0, topic = 0, partition = 0;  // indexes into the response
  std::shared_ptr<const TopicEntry> entry;      // keeps the log alive
  storage::PartitionLog* log = nullptr;
  int64_t required_hw = 0;
  int32_t leader_epoch = -1;
  bool done = false;
};

constexpr int32_t kReplicationWaitMs = 10000;

class PendingMarkers : public LongPoll<PendingMarkers> {
 public:
  PendingMarkers(RequestContext ctx, protocol::WriteTxnMarkersResponse resp,
                 std::vector<AwaitedMarker> awaited)
      : LongPoll(ctx.svc, ctx.responder.executor(), kReplicationWaitMs),
        ctx_(std::move(ctx)),
        resp_(std::move(resp)),
        awaited_(std::move(awaited)) {}

  bool attempt(bool out_of_time, WaitOn& wait) {
    for (auto& a : awaited_) {
      if (a.done) continue;
      auto& tout = resp_.markers[a.marker].topics[a.topic];
      auto& pout = tout.partitions[a.partition];
      const int64_t hw = a.log->high_watermark();
      const bool same_term = ctx_.svc.cluster->leader_check(tout.name, pout.partition_index,
                                                            a.leader_epoch) == ErrorCode::none &&
                             a.log->latest_epoch() == a.leader_epoch;
      if (!same_term) {
        pout.error_code = ErrorCode::not_leader_or_follower;
      } else if (hw >= a.required_hw) {
        pout.error_code = ErrorCode::none;
      } else if (out_of_time) {
        pout.error_code = ErrorCode::request_timed_out;
      } else {
        wait.add(a.log, hw);
        continue;
      }
      a.done = true;
      if (pout.error_code != ErrorCode::none) {
        ctx_.svc.metrics.request_error(ctx_.api_key, pout.error_code);
      }
    }
    if (!wait.logs.empty()) return false;
    ctx_.respond(resp_);
    return true;
  }

 private:
  RequestContext ctx_;
  protocol::WriteTxnMarkersResponse resp_;
  std::vector<AwaitedMarker> awaited_;
};

// Writes one marker; `awaited` gets the partition when its answer waits for replication.
ErrorCode write_one(RequestContext& ctx,
                    const protocol::WriteTxnMarkersRequest::WritableTxnMarker& m,
                    const std::string& topic_name, int32_t partition, AwaitedMarker& awaited) {
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
    if (ctx.svc.cluster && r.status().code() == Errc::invalid_argument) {
      return ErrorCode::not_leader_or_follower;  // became a follower since the check
    }
    spdlog::error("WriteTxnMarkers {}-{} producer {}: {}", topic_name, partition, m.producer_id,
                  r.status().to_string());
    return ErrorCode::kafka_storage_error;
  }
  if (r->producer_check == storage::ProducerCheck::stale_epoch) {
    return ErrorCode::invalid_producer_epoch;
  }
  if (r->producer_check == storage::ProducerCheck::fenced_coordinator) {
    spdlog::info("WriteTxnMarkers {}-{}: {}", topic_name, partition, r->producer_message);
    return ErrorCode::transaction_coordinator_fenced;
  }
  spdlog::log(ctx.svc.cluster ? spdlog::level::debug : spdlog::level::info,
              "WriteTxnMarkers: {} marker of producer {} epoch {} written to {}-{} by {}",
              m.transaction_result ? "COMMIT" : "ABORT", m.producer_id, m.producer_epoch,
              topic_name, partition, ctx.principal());
  if (ctx.svc.cluster) {
    awaited.entry = topic;
    awaited.log = log;
    awaited.required_hw = r->last_offset + 1;
    awaited.leader_epoch = r->leader_epoch;
  }
  return ErrorCode::none;
}
}  // namespace

void write_txn_markers(RequestContext& ctx, protocol::Reader& body) {
  protocol::WriteTxnMarkersRequest req;
  req.decode(body, ctx.version);
  protocol::WriteTxnMarkersResponse resp;
  const bool allowed = authorize_cluster(ctx, AclOperation::cluster_action);
  std::vector<AwaitedMarker> awaited;
  for (const auto& m : req.markers) {
    auto& mout = resp.markers.emplace_back();
    mout.producer_id = m.producer_id;
    for (const auto& t : m.topics) {
      auto& tout = mout.topics.emplace_back();
      tout.name = t.name;
      for (int32_t p : t.partition_indexes) {
        auto& pout = tout.partitions.emplace_back();
        pout.partition_index = p;
        AwaitedMarker a;
        pout.error_code =
            allowed ? write_one(ctx, m, t.name, p, a) : ErrorCode::cluster_authorization_failed;
        if (pout.error_code != ErrorCode::none) {
          ctx.svc.metrics.request_error(ctx.api_key, pout.error_code);
        } else if (a.log) {
          a.marker = resp.markers.size() - 1;
          a.topic = mout.topics.size() - 1;
          a.partition = tout.partitions.size() - 1;
          awaited.push_back(std::move(a));
        }
      }
    }
  }
  if (!awaited.empty()) {
    auto pending = std::make_shared<PendingMarkers>(ctx, std::move(resp), std::move(awaited));
    pending->run(false);
    return;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
