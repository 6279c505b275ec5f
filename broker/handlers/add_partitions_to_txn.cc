// AddPartitionsToTxn (24) v0-3: the producer's partitions join its ongoing transaction. Kafka's
// per-partition answers: an unauthorized topic gets TOPIC_AUTHORIZATION_FAILED and an unknown one
// UNKNOWN_TOPIC_OR_PARTITION, the other partitions OPERATION_NOT_ATTEMPTED. Primary-key tables
// join like log topics (their rows are held until the marker: pkindex/pk_state.h).
#include "protocol/messages/add_partitions_to_txn.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "broker/txn/txn_coordinator.h"

namespace strata::broker::handlers {

void add_partitions_to_txn(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::AddPartitionsToTxnRequest req;
  req.decode(body, ctx.version);
  protocol::AddPartitionsToTxnResponse resp;
  std::vector<std::vector<ErrorCode>> codes(req.topics.size());
  std::vector<txn::TopicPartition> tps;
  bool refused = false;
  ErrorCode all = ErrorCode::none;  // one code for every partition
  if (!authorize(ctx, AclOperation::write, ResourceType::transactional_id, req.transactional_id)) {
    all = ErrorCode::transactional_id_authorization_failed;
  } else if (!ctx.svc.txns) {
    all = kNoTxnCoordinator;
  }
  for (size_t i = 0; i < req.topics.size(); ++i) {
    const auto& t = req.topics[i];
    const bool writable =
        all == ErrorCode::none && authorize_topic(ctx, AclOperation::write, t.name);
    auto topic = writable ? ctx.svc.topics.find(t.name) : nullptr;
    // In a cluster the coordinator need not hold a replica: the partition exists when the view
    // has it.
    auto view = writable && ctx.svc.cluster ? ctx.svc.cluster->snapshot() : nullptr;
    for (int32_t p : t.partitions) {
      ErrorCode c = all;
      if (c == ErrorCode::none) {
        const bool exists =
            view ? view->partition(t.name, p) != nullptr : topic && topic->partition(p);
        if (!writable) {
          c = ErrorCode::topic_authorization_failed;
        } else if (!exists || is_internal_topic(t.name)) {
          c = ErrorCode::unknown_topic_or_partition;
        }
      }
      if (c != ErrorCode::none) refused = true;
      codes[i].push_back(c);
      tps.emplace_back(t.name, p);
    }
  }
  bool wait_durable = false;
  if (all == ErrorCode::none && !refused) {
    const txn::TxnError e = ctx.svc.txns->add_partitions(req.transactional_id, req.producer_id,
                                                         req.producer_epoch, tps, now_ms());
    all = txn_error_code(e, ctx.version, 2);
    for (auto& v : codes) {
      for (auto& c : v) c = all;
    }
    wait_durable = e == txn::TxnError::none;
  } else if (all == ErrorCode::none) {
    for (auto& v : codes) {
      for (auto& c : v) {
        if (c == ErrorCode::none) c = ErrorCode::operation_not_attempted;
      }
    }
  }
  for (size_t i = 0; i < req.topics.size(); ++i) {
    auto& tr = resp.results.emplace_back();
    tr.name = req.topics[i].name;
    for (size_t j = 0; j < req.topics[i].partitions.size(); ++j) {
      auto& pr = tr.results.emplace_back();
      pr.partition_index = req.topics[i].partitions[j];
      pr.partition_error_code = codes[i][j];
      if (codes[i][j] != ErrorCode::none) ctx.svc.metrics.request_error(ctx.api_key, codes[i][j]);
    }
  }
  if (wait_durable) {  // answered once the partitions' place in the transaction is durable
    ctx.svc.txns->when_durable(req.transactional_id,
                               [c = ctx, resp = std::move(resp)](txn::TxnError d) mutable {
                                 const ErrorCode code = txn_error_code(d, c.version, 2);
                                 for (auto& tr : resp.results) {
                                   for (auto& pr : tr.results) pr.partition_error_code = code;
                                 }
                                 if (code != ErrorCode::none)
                                   c.svc.metrics.request_error(c.api_key, code);
                                 c.respond(resp);
                               });
    return;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
