// ListTransactions (66) v0-1 and DescribeTransactions (65) v0: the transaction coordinator's view,
// for operators finding stuck transactions (Kafka's kafka-transactions.sh, Admin.listTransactions /
// describeTransactions). A transactional id the principal may not DESCRIBE is left out of the
// listing and answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED by Describe; a described
// transaction's partitions are limited to topics the principal may DESCRIBE, as Kafka does. A
// broker without a coordinator (cluster mode) lists nothing and describes no id.
#include <map>

#include "broker/handlers/handlers.h"
#include "broker/handlers/txn_common.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/txn_coordinator.h"
#include "broker/txn/txn_listing.h"
#include "protocol/messages/describe_transactions.h"
#include "protocol/messages/list_transactions.h"

namespace strata::broker::handlers {

void list_transactions(RequestContext& ctx, protocol::Reader& body) {
  protocol::ListTransactionsRequest req;
  req.decode(body, ctx.version);
  protocol::ListTransactionsResponse resp;
  txn::TxnListFilter filter;
  filter.states = req.state_filters;
  filter.producer_ids = req.producer_id_filters;
  filter.min_duration_ms = req.duration_filter;
  resp.unknown_state_filters = txn::unknown_state_filters(filter);
  if (ctx.svc.txns) {
    const int64_t now = now_ms();
    for (const auto& [id, m] : ctx.svc.txns->list()) {
      if (!txn::txn_listed(filter, m, now)) continue;
      if (!may(ctx, AclOperation::describe, ResourceType::transactional_id, id)) continue;
      auto& s = resp.transaction_states.emplace_back();
      s.transactional_id = id;
      s.producer_id = m.producer_id;
      s.transaction_state = txn::txn_state_name(m.state);
    }
  }
  ctx.respond(resp);
}

void describe_transactions(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  protocol::DescribeTransactionsRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeTransactionsResponse resp;
  for (const auto& id : req.transactional_ids) {
    auto& s = resp.transaction_states.emplace_back();
    s.transactional_id = id;
    s.transaction_start_time_ms = -1;
    s.producer_id = -1;
    s.producer_epoch = -1;
    if (!authorize(ctx, AclOperation::describe, ResourceType::transactional_id, id)) {
      s.error_code = ErrorCode::transactional_id_authorization_failed;
      continue;
    }
    if (!ctx.svc.txns) {
      s.error_code = kNoTxnCoordinator;
      continue;
    }
    auto m = ctx.svc.txns->describe(id);
    if (!m) {  // a cluster's broker that is not the id's coordinator: NOT_COORDINATOR, as Kafka
      const txn::TxnError o = ctx.svc.txns->owner_error(id);
      s.error_code = o == txn::TxnError::none ? ErrorCode::transactional_id_not_found
                                              : txn_error_code(o, 0, -1);
      continue;
    }
    s.transaction_state = txn::txn_state_name(m->state);
    s.transaction_timeout_ms = m->timeout_ms;
    s.transaction_start_time_ms = m->started_ms;
    s.producer_id = m->producer_id;
    s.producer_epoch = m->producer_epoch;
    // As Kafka: the partitions of the open or completing transaction; a completed one has none.
    const bool open = m->state == txn::TxnState::ongoing ||
                      m->state == txn::TxnState::prepare_commit ||
                      m->state == txn::TxnState::prepare_abort;
    std::map<std::string, std::vector<int32_t>> by_topic;
    for (const auto& [topic, partition] : m->partitions) {
      if (open) by_topic[topic].push_back(partition);
    }
    for (auto& [topic, partitions] : by_topic) {
      if (!may(ctx, AclOperation::describe, ResourceType::topic, topic)) continue;
      auto& t = s.topics.emplace_back();
      t.name = topic;
      t.partition_indexes = std::move(partitions);
    }
  }
  for (const auto& s : resp.transaction_states) {
    if (s.error_code != ErrorCode::none) ctx.svc.metrics.request_error(ctx.api_key, s.error_code);
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
