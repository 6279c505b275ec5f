// AddOffsetsToTxn (25) v0-3: a consumer group's offsets join the producer's transaction (it starts
// one if none is open); TxnOffsetCommit then stores them in it.
#include "protocol/messages/add_offsets_to_txn.h"

#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/txn_coordinator.h"

namespace strata::broker::handlers {

void add_offsets_to_txn(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::AddOffsetsToTxnRequest req;
  req.decode(body, ctx.version);
  protocol::AddOffsetsToTxnResponse resp;
  if (!authorize(ctx, AclOperation::write, ResourceType::transactional_id, req.transactional_id)) {
    resp.error_code = ErrorCode::transactional_id_authorization_failed;
  } else if (!authorize_group(ctx, AclOperation::read, req.group_id)) {
    resp.error_code = ErrorCode::group_authorization_failed;
  } else if (!ctx.svc.txns) {
    resp.error_code = kNoTxnCoordinator;
  } else if (req.group_id.empty()) {
    resp.error_code = ErrorCode::invalid_group_id;
  } else {
    const txn::TxnError e = ctx.svc.txns->add_offsets(req.transactional_id, req.producer_id,
                                                      req.producer_epoch, req.group_id, now_ms());
    if (e == txn::TxnError::none) {  // answered once the group's place in the txn is durable
      ctx.svc.txns->when_durable(req.transactional_id, [c = ctx](txn::TxnError d) {
        protocol::AddOffsetsToTxnResponse r;
        r.error_code = txn_error_code(d, c.version, 2);
        c.respond(r);
      });
      return;
    }
    resp.error_code = txn_error_code(e, ctx.version, 2);
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
