// EndTxn (26) v0-3: commit or abort the producer's transaction. Answered once the COMMIT/ABORT
// markers are on every partition of the transaction and, for a commit, its consumer offsets are
// durable (a marker write that fails is retried by the coordinator's sweep; the answer is then
// success at once, as the decision is taken).
#include "protocol/messages/end_txn.h"

#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/txn_coordinator.h"

namespace strata::broker::handlers {

void end_txn(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::EndTxnRequest req;
  req.decode(body, ctx.version);
  protocol::EndTxnResponse resp;
  if (!authorize(ctx, AclOperation::write, ResourceType::transactional_id, req.transactional_id)) {
    resp.error_code = ErrorCode::transactional_id_authorization_failed;
  } else if (!ctx.svc.txns) {
    resp.error_code = kNoTxnCoordinator;
  } else {
    RequestContext c = ctx;
    const int16_t version = ctx.version;
    ctx.svc.txns->end_txn(req.transactional_id, req.producer_id, req.producer_epoch, req.committed,
                          [c, version](txn::TxnError e) {
                            protocol::EndTxnResponse r;
                            r.error_code = txn_error_code(e, version, 2);
                            c.respond(r);
                          });
    return;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
