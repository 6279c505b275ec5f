// ListTransactions' filters (Kafka's TransactionStateManager.listTransactionStates): by state name
// as Kafka spells it, by producer id, and (v1+) by how long the transaction has been open. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/txn/txn_state.h"

namespace strata::broker::txn {

// The state Kafka names `name` ("Ongoing", "PrepareCommit", ...); nullopt for any other text
// (Kafka's names are case-sensitive).
std::optional<TxnState> txn_state_from_name(std::string_view name);

struct TxnListFilter {
  // Empty: every state. Names Kafka does not know match nothing (and are reported back).
  std::vector<std::string> states;
  std::vector<int64_t> producer_ids;  // empty: every producer
  int64_t min_duration_ms = -1;       // < 0: no bound; else open strictly longer than this
};

// The filter's state names that name no state (ListTransactions' unknown_state_filters), in the
// request's order.
std::vector<std::string> unknown_state_filters(const TxnListFilter& f);

// Whether a transactional id in state `m` is listed. A transaction without a start time (none
// open) never passes a duration filter.
bool txn_listed(const TxnListFilter& f, const TxnMetadata& m, int64_t now_ms);

}  // namespace strata::broker::txn
