// FindCoordinator (10): this broker coordinates every group. Transactions do not exist yet, so a
// transaction key gets an error with a message saying so. The code is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED: librdkafka (checked
// with 2.0.2) retries every other FindCoordinator error for a transaction key until the
// init_transactions() timeout — UNSUPPORTED_VERSION included — and treats only this one (and
// CLUSTER_AUTHORIZATION_FAILED) as fatal, failing at once with our message; a Java client is fatal
// on either. Other key types keep UNSUPPORTED_VERSION.
#include "protocol/messages/find_coordinator.h"

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/services.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
constexpr int8_t kGroupKey = 0;
constexpr int8_t kTransactionKey = 1;
constexpr const char* kNoTransactions = "Transactions are not supported by this broker";
}  // namespace

void find_coordinator(RequestContext& ctx, protocol::Reader& body) {
  protocol::FindCoordinatorRequest req;
  req.decode(body, ctx.version);
  protocol::FindCoordinatorResponse resp;
  Listener me = ctx.svc.advertised;
  int32_t coordinator = ctx.svc.node_id;
  const bool group = req.key_type == kGroupKey;
  protocol::ErrorCode err = group ? protocol::ErrorCode::none
                            : req.key_type == kTransactionKey
                                ? protocol::ErrorCode::transactional_id_authorization_failed
                                : protocol::ErrorCode::unsupported_version;
  if (ctx.svc.cluster && group) {
    // Until group state replicates, one broker coordinates every group: the live broker with the
    // smallest id, so every broker names the same one.
    auto s = ctx.svc.cluster->snapshot();
    if (s->brokers.empty()) {
      err = protocol::ErrorCode::coordinator_not_available;
      coordinator = -1;
    } else {
      const auto& b = s->brokers.begin()->second;
      coordinator = b.id;
      me.host = b.host;
      me.port = static_cast<uint16_t>(b.port);
    }
  }
  if (ctx.version < 4) {
    resp.error_code = err;
    if (group) {
      resp.node_id = coordinator;
      resp.host = me.host;
      resp.port = me.port;
    } else {
      resp.error_message = kNoTransactions;
      resp.node_id = -1;
      resp.port = -1;
    }
  } else {
    for (const auto& key : req.coordinator_keys) {
      auto& c = resp.coordinators.emplace_back();
      c.key = key;
      c.error_code = err;
      if (group) {
        c.node_id = coordinator;
        c.host = me.host;
        c.port = me.port;
      } else {
        c.error_message = kNoTransactions;
        c.node_id = -1;
        c.port = -1;
      }
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
