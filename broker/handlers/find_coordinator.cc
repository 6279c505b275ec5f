// FindCoordinator (10): this broker coordinates every group. Transactions do not exist yet, so a
// transaction key gets UNSUPPORTED_VERSION with a message saying so (a Java client stops there
// instead of retrying forever).
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/find_coordinator.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
constexpr int8_t kGroupKey = 0;
constexpr const char* kNoTransactions = "Transactions are not supported by this broker";
}  // namespace

void find_coordinator(RequestContext& ctx, protocol::Reader& body) {
  protocol::FindCoordinatorRequest req;
  req.decode(body, ctx.version);
  protocol::FindCoordinatorResponse resp;
  const Listener& me = ctx.broker.advertised();
  const bool group = req.key_type == kGroupKey;
  const int16_t err = group ? 0 : static_cast<int16_t>(protocol::ErrorCode::unsupported_version);
  if (ctx.version < 4) {
    resp.error_code = err;
    if (group) {
      resp.node_id = ctx.broker.node_id();
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
        c.node_id = ctx.broker.node_id();
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
