// InitProducerId (22), v0-5. Without a transactional id every call gets a fresh producer id
// (ProducerIdManager: unique across restarts) with epoch 0, as a Java broker does (a v3+ request
// carrying its current id/epoch also gets a fresh id: there is no epoch bump without a
// transactional id). With one, the transaction coordinator (broker/txn/txn_coordinator.h) bumps
// the id's epoch, fencing older instances, and aborts a transaction left open by one of them
// (CONCURRENT_TRANSACTIONS until its markers are written: the client retries). A v3+ request with
// an id/epoch that is not the current one is fenced: PRODUCER_FENCED from v4 (Kafka's message
// definition), INVALID_PRODUCER_EPOCH before. An empty transactional id gets INVALID_REQUEST, as in
// Kafka; a broker of a cluster (no transaction coordinator) COORDINATOR_NOT_AVAILABLE.
#include "protocol/messages/init_producer_id.h"

#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/producer_ids.h"
#include "broker/txn/txn_coordinator.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void init_producer_id(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::InitProducerIdRequest req;
  req.decode(body, ctx.version);
  protocol::InitProducerIdResponse resp;
  resp.producer_id = -1;
  resp.producer_epoch = -1;
  // Kafka: a transactional id needs WRITE on it; an idempotent producer IDEMPOTENT_WRITE on the
  // cluster (not audited when missing) or WRITE on some topic (KIP-679).
  if (req.transactional_id.has_value() && !req.transactional_id->empty() &&
      !authorize(ctx, AclOperation::write, ResourceType::transactional_id, *req.transactional_id)) {
    resp.error_code = ErrorCode::transactional_id_authorization_failed;
  } else if (!req.transactional_id.has_value() &&
             !may(ctx, AclOperation::idempotent_write, ResourceType::cluster,
                  security::kClusterName) &&
             !authorize_any(ctx, AclOperation::write, ResourceType::topic)) {
    resp.error_code = ErrorCode::cluster_authorization_failed;
  } else if (req.transactional_id.has_value() && req.transactional_id->empty()) {
    resp.error_code = ErrorCode::invalid_request;
  } else if (req.transactional_id.has_value() && !ctx.svc.txns) {
    resp.error_code = kNoTxnCoordinator;
  } else if (req.transactional_id.has_value()) {
    txn::InitResult r =
        ctx.svc.txns->init_producer_id(*req.transactional_id, req.transaction_timeout_ms,
                                       req.producer_id, req.producer_epoch, now_ms());
    if (r.no_producer_id) {
      resp.error_code = ErrorCode::coordinator_not_available;
    } else if (r.error == txn::TxnError::none) {  // answered once the new epoch is durable
      ctx.svc.txns->when_durable(*req.transactional_id, [c = ctx, r](txn::TxnError d) {
        protocol::InitProducerIdResponse out;
        out.error_code = txn_error_code(d, c.version, 4);
        out.producer_id = d == txn::TxnError::none ? r.producer_id : -1;
        out.producer_epoch = d == txn::TxnError::none ? r.producer_epoch : -1;
        c.respond(out);
      });
      return;
    } else {
      resp.error_code = txn_error_code(r.error, ctx.version, 4);
    }
  } else {
    auto id = ctx.svc.producer_ids.next();
    if (!id.ok()) {
      spdlog::error("allocating a producer id failed: {}", id.status().to_string());
      resp.error_code = ErrorCode::coordinator_not_available;
    } else {
      resp.producer_id = *id;
      resp.producer_epoch = 0;
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
