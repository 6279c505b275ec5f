// EndTxnOffsets (extension API key 16006, version 0; protocol/ext/txn_offsets.proto): a cluster's
// transaction coordinator ends a transaction's consumer offsets at their group's coordinator.
// COMMIT writes them as the group's committed offsets (GroupCoordinator::commit_transactional,
// durable in __consumer_offsets before the answer); both COMMIT and ABORT end what the forwarder
// remembered as pending for require_stable. CLUSTER_ACTION only (brokers).
#include <spdlog/spdlog.h>

#include "broker/group/group_coordinator.h"
#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/txn_forwarder.h"
#include "protocol/ext/txn_offsets.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void ext_end_txn_offsets(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  strata::ext::EndTxnOffsetsRequest req;
  strata::ext::EndTxnOffsetsResponse resp;
  auto fail = [&](ErrorCode e, std::string msg) {
    set_ext_error(resp, e);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  if (!parse_ext_body(body, req)) return fail(ErrorCode::invalid_request, "undecodable request");
  if (!authorize_cluster(ctx, AclOperation::cluster_action)) {  // broker-to-broker only
    return fail(ErrorCode::cluster_authorization_failed, "Cluster authorization failed.");
  }
  if (ctx.svc.txn_forwarder) ctx.svc.txn_forwarder->clear(req.group(), req.producer_id());
  if (!req.commit() || req.offsets().empty()) return respond_ext(ctx, resp);
  std::vector<group::CommitPartition> parts;
  for (const auto& o : req.offsets()) {
    auto& p = parts.emplace_back();
    p.topic = o.topic();
    p.partition = o.partition();
    p.offset = o.offset();
    p.leader_epoch = o.leader_epoch();
    if (o.has_metadata()) p.metadata = o.metadata();
  }
  ctx.svc.groups.commit_transactional(
      req.group(), std::move(parts),
      [c = ctx, group = req.group()](std::vector<group::CommitPartition> result) mutable {
        strata::ext::EndTxnOffsetsResponse r;
        for (const auto& p : result) {
          if (p.error == ErrorCode::none) continue;
          set_ext_error(r, p.error);
          r.set_error_message("committing " + p.topic + "-" + std::to_string(p.partition) +
                              " for group " + group + ": " + protocol::error_name(p.error));
          break;
        }
        respond_ext(c, r);
      });
}

}  // namespace strata::broker::handlers
