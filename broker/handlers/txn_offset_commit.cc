// TxnOffsetCommit (28) v0-3: consumed offsets stored in the producer's transaction (after
// AddOffsetsToTxn for the group); OffsetFetch shows them only once the transaction commits, and
// an abort drops them. The v3 group fields (generation, member, instance) are not checked against
// the group's membership. A stale producer epoch is INVALID_PRODUCER_EPOCH on every version:
// Kafka's definition of v0-3 never adds PRODUCER_FENCED. Clients send it to the group's
// coordinator; in a cluster the transaction's coordinator is usually another broker, which keeps
// the offsets with the transaction: the request is forwarded there (txn/txn_forwarder.h) and its
// answer relayed.
#include "protocol/messages/txn_offset_commit.h"

#include <spdlog/spdlog.h>

#include <map>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/partition_loop.h"
#include "broker/handlers/txn_common.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "broker/txn/txn_coordinator.h"
#include "broker/txn/txn_forwarder.h"

namespace strata::broker::handlers {

void txn_offset_commit(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::TxnOffsetCommitRequest req;
  req.decode(body, ctx.version);
  protocol::TxnOffsetCommitResponse resp;
  ErrorCode all = ErrorCode::none;
  if (!authorize(ctx, AclOperation::write, ResourceType::transactional_id, req.transactional_id)) {
    all = ErrorCode::transactional_id_authorization_failed;
  } else if (!authorize_group(ctx, AclOperation::read, req.group_id)) {
    all = ErrorCode::group_authorization_failed;
  } else if (!ctx.svc.txns) {
    all = kNoTxnCoordinator;
  } else if (req.group_id.empty()) {
    all = ErrorCode::invalid_group_id;
  }
  // In a cluster: forwarded to the transaction's coordinator unless this broker is it (a request
  // forwarded here by another broker is never forwarded again).
  bool forward = false;
  if (all == ErrorCode::none && ctx.svc.cluster) {
    const txn::TxnError owner = ctx.svc.txns->owner_error(req.transactional_id);
    if (owner != txn::TxnError::none) {
      if (ctx.header.client_id == txn::kForwardClientId || !ctx.svc.txn_forwarder) {
        all = txn_error_code(owner, ctx.version, -1);
      } else {
        forward = true;
      }
    }
  }
  auto view = ctx.svc.cluster && all == ErrorCode::none ? ctx.svc.cluster->snapshot() : nullptr;
  const int32_t max_metadata = ctx.svc.config.offset_metadata_max_bytes;
  std::vector<txn::PendingOffset> offsets;
  std::vector<ErrorCode> codes;
  protocol::TxnOffsetCommitRequest fwd;  // the partitions that passed the checks here
  for (const auto& t : req.topics) {
    const bool readable =
        all == ErrorCode::none && authorize_topic(ctx, AclOperation::read, t.name);
    auto topic = readable ? ctx.svc.topics.find(t.name) : nullptr;
    for (const auto& p : t.partitions) {
      ErrorCode c = all;
      if (c == ErrorCode::none) {
        const bool exists = view ? view->partition(t.name, p.partition_index) != nullptr
                                 : topic && topic->partition(p.partition_index);
        if (!readable) {
          c = ErrorCode::topic_authorization_failed;
        } else if (!exists) {
          c = ErrorCode::unknown_topic_or_partition;
        } else if (p.committed_metadata &&
                   static_cast<int64_t>(p.committed_metadata->size()) > max_metadata) {
          c = ErrorCode::offset_metadata_too_large;
        } else {
          offsets.push_back({t.name, p.partition_index, p.committed_offset,
                             p.committed_leader_epoch, p.committed_metadata});
          if (fwd.topics.empty() || fwd.topics.back().name != t.name) {
            fwd.topics.emplace_back().name = t.name;
          }
          fwd.topics.back().partitions.push_back(p);
        }
      }
      codes.push_back(c);
    }
  }
  auto respond = [](const RequestContext& c, const protocol::TxnOffsetCommitRequest& rq,
                    const std::vector<ErrorCode>& cs) {
    protocol::TxnOffsetCommitResponse r;
    size_t i = 0;
    mirror_partitions(rq.topics, r.topics, protocol::TxnOffsetCommitResponse::Partition{},
                      [&](const auto&, const auto&, auto& op) {
                        op.error_code = cs[i++];
                        if (op.error_code != ErrorCode::none) {
                          c.svc.metrics.request_error(c.api_key, op.error_code);
                        }
                      });
    c.respond(r);
  };
  if (forward && !offsets.empty()) {
    fwd.transactional_id = req.transactional_id;
    fwd.group_id = req.group_id;
    fwd.producer_id = req.producer_id;
    fwd.producer_epoch = req.producer_epoch;
    fwd.generation_id = req.generation_id;
    fwd.member_id = req.member_id;
    fwd.group_instance_id = req.group_instance_id;
    ctx.svc.txn_forwarder->forward(
        std::move(fwd), ctx.version,
        [c = ctx, req = std::move(req), codes = std::move(codes),
         respond](Result<protocol::TxnOffsetCommitResponse> r) mutable {
          std::map<std::pair<std::string, int32_t>, ErrorCode> got;
          if (r.ok()) {
            for (const auto& t : r->topics) {
              for (const auto& p : t.partitions) got[{t.name, p.partition_index}] = p.error_code;
            }
          } else {
            spdlog::warn("forwarding TxnOffsetCommit of '{}' failed: {}", req.transactional_id,
                         r.status().to_string());
          }
          size_t i = 0;
          for (const auto& t : req.topics) {
            for (const auto& p : t.partitions) {
              ErrorCode& code = codes[i++];
              if (code != ErrorCode::none) continue;
              auto it = got.find({t.name, p.partition_index});
              // Unreachable: the client finds the coordinator again and retries.
              code = it != got.end() ? it->second : ErrorCode::coordinator_not_available;
            }
          }
          respond(c, req, codes);
        });
    return;
  }
  if (all == ErrorCode::none && !offsets.empty()) {
    const txn::TxnError e = ctx.svc.txns->commit_offsets(
        req.transactional_id, req.group_id, req.producer_id, req.producer_epoch, offsets);
    if (e == txn::TxnError::none) {  // answered once the offsets are durable in the transaction
      const std::string id = req.transactional_id;
      ctx.svc.txns->when_durable(id, [c = ctx, req = std::move(req), codes = std::move(codes),
                                      respond](txn::TxnError d) mutable {
        for (auto& code : codes) {
          if (code == ErrorCode::none) code = txn_error_code(d, c.version, -1);
        }
        respond(c, req, codes);
      });
      return;
    }
    for (auto& c : codes) {
      if (c == ErrorCode::none) c = txn_error_code(e, ctx.version, -1);
    }
  }
  respond(ctx, req, codes);
}

}  // namespace strata::broker::handlers
