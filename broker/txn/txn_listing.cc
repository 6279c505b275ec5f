#include "broker/txn/txn_listing.h"

#include <algorithm>

namespace strata::broker::txn {

namespace {
constexpr TxnState kAllStates[] = {TxnState::empty,           TxnState::ongoing,
                                   TxnState::prepare_commit,  TxnState::prepare_abort,
                                   TxnState::complete_commit, TxnState::complete_abort};
}  // namespace

std::optional<TxnState> txn_state_from_name(std::string_view name) {
  for (TxnState s : kAllStates) {
    if (name == txn_state_name(s)) return s;
  }
  return std::nullopt;
}

std::vector<std::string> unknown_state_filters(const TxnListFilter& f) {
  std::vector<std::string> out;
  for (const auto& s : f.states) {
    if (!txn_state_from_name(s)) out.push_back(s);
  }
  return out;
}

bool txn_listed(const TxnListFilter& f, const TxnMetadata& m, int64_t now_ms) {
  if (!f.producer_ids.empty() && std::find(f.producer_ids.begin(), f.producer_ids.end(),
                                           m.producer_id) == f.producer_ids.end()) {
    return false;
  }
  // As Kafka: a non-empty state filter holding only unknown names lists nothing.
  if (!f.states.empty() && std::none_of(f.states.begin(), f.states.end(), [&](const auto& s) {
        return txn_state_from_name(s) == m.state;
      })) {
    return false;
  }
  if (f.min_duration_ms >= 0 && (m.started_ms < 0 || now_ms - m.started_ms <= f.min_duration_ms)) {
    return false;
  }
  return true;
}

}  // namespace strata::broker::txn
