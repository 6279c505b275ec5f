// InitProducerId (22), v0-5: idempotent producers only. Without a transactional id every call gets
// a fresh producer id (ProducerIdManager: unique across restarts) with epoch 0, as a Java broker
// does (a v3+ request carrying its current id/epoch also gets a fresh id: there is no epoch bump
// without a transactional id). A transactional id gets UNSUPPORTED_VERSION (transactions are a
// later stage; the response has no message field — FindCoordinator, which transactional clients
// call first, carries the "not supported" message); an empty one gets INVALID_REQUEST, as in Kafka.
#include "protocol/messages/init_producer_id.h"

#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/producer_ids.h"
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
  } else if (req.transactional_id.has_value()) {
    const bool empty = req.transactional_id->empty();
    resp.error_code = empty ? ErrorCode::invalid_request : ErrorCode::unsupported_version;
    spdlog::debug(
        "InitProducerId from {} with transactional id '{}': transactions are not "
        "supported",
        ctx.responder.peer(), *req.transactional_id);
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
