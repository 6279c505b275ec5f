#include "broker/txn/txn_state.h"

#include <limits>

namespace strata::broker::txn {

const char* txn_state_name(TxnState s) {
  switch (s) {
    case TxnState::empty:
      return "Empty";
    case TxnState::ongoing:
      return "Ongoing";
    case TxnState::prepare_commit:
      return "PrepareCommit";
    case TxnState::prepare_abort:
      return "PrepareAbort";
    case TxnState::complete_commit:
      return "CompleteCommit";
    case TxnState::complete_abort:
      return "CompleteAbort";
  }
  return "Unknown";
}

namespace {

TxnOutcome error(TxnError e) {
  TxnOutcome o;
  o.error = e;
  return o;
}

bool preparing(TxnState s) { return s == TxnState::prepare_commit || s == TxnState::prepare_abort; }
bool completed(TxnState s) {
  return s == TxnState::empty || s == TxnState::complete_commit || s == TxnState::complete_abort;
}

}  // namespace

TxnOutcome TxnStateMachine::check_producer(int64_t producer_id, int16_t epoch) const {
  if (producer_id != m_.producer_id) return error(TxnError::invalid_producer_id_mapping);
  if (epoch < m_.producer_epoch) return error(TxnError::producer_fenced);
  if (epoch > m_.producer_epoch) return error(TxnError::invalid_producer_id_mapping);
  return {};
}

TxnOutcome TxnStateMachine::begin_abort(bool bump_epoch) {
  if (bump_epoch) ++m_.producer_epoch;  // fences the producer of the open transaction
  m_.state = TxnState::prepare_abort;
  TxnOutcome o;
  o.persist = true;
  o.write_markers_commit = false;
  o.marker_partitions.assign(m_.partitions.begin(), m_.partitions.end());
  return o;
}

TxnOutcome TxnStateMachine::init_producer_id(int32_t timeout_ms, int64_t new_producer_id,
                                             int64_t now_ms) {
  (void)now_ms;
  if (timeout_ms <= 0 || timeout_ms > limits_.max_timeout_ms) {
    return error(TxnError::invalid_transaction_timeout);
  }
  if (preparing(m_.state)) return error(TxnError::concurrent_transactions);
  if (m_.state == TxnState::ongoing) {
    // A new producer instance took over mid-transaction: abort it (fencing the old one), and
    // let the client retry once the markers are written.
    TxnOutcome o = begin_abort(true);
    o.error = TxnError::concurrent_transactions;
    return o;
  }
  if (m_.producer_id < 0 || m_.producer_epoch >= std::numeric_limits<int16_t>::max() - 1) {
    m_.producer_id = new_producer_id;
    m_.producer_epoch = 0;
  } else {
    ++m_.producer_epoch;
  }
  m_.timeout_ms = timeout_ms;
  m_.state = TxnState::empty;
  m_.partitions.clear();
  m_.started_ms = -1;
  TxnOutcome o;
  o.persist = true;
  return o;
}

TxnOutcome TxnStateMachine::add_partitions(int64_t producer_id, int16_t epoch,
                                           const std::vector<TopicPartition>& partitions,
                                           int64_t now_ms) {
  if (auto o = check_producer(producer_id, epoch); o.error != TxnError::none) return o;
  if (preparing(m_.state)) return error(TxnError::concurrent_transactions);
  const bool starts = completed(m_.state);
  if (starts) {
    m_.partitions.clear();
    m_.started_ms = now_ms;
  }
  const size_t before = m_.partitions.size();
  m_.partitions.insert(partitions.begin(), partitions.end());
  TxnOutcome o;
  o.persist = starts || m_.partitions.size() != before;
  m_.state = TxnState::ongoing;
  return o;
}

TxnOutcome TxnStateMachine::end_txn(int64_t producer_id, int16_t epoch, bool commit) {
  if (auto o = check_producer(producer_id, epoch); o.error != TxnError::none) return o;
  switch (m_.state) {
    case TxnState::ongoing: {
      m_.state = commit ? TxnState::prepare_commit : TxnState::prepare_abort;
      TxnOutcome o;
      o.persist = true;
      o.write_markers_commit = commit;
      o.marker_partitions.assign(m_.partitions.begin(), m_.partitions.end());
      return o;
    }
    case TxnState::prepare_commit:
    case TxnState::prepare_abort:
      // The same request retried while its markers are written: wait; the other one: wrong.
      if ((m_.state == TxnState::prepare_commit) == commit) {
        return error(TxnError::concurrent_transactions);
      }
      return error(TxnError::invalid_txn_state);
    case TxnState::complete_commit:
    case TxnState::complete_abort:
      // A retry of the EndTxn that completed is answered with success (idempotent).
      if ((m_.state == TxnState::complete_commit) == commit) return {};
      return error(TxnError::invalid_txn_state);
    case TxnState::empty:
      return error(TxnError::invalid_txn_state);
  }
  return error(TxnError::invalid_txn_state);
}

TxnOutcome TxnStateMachine::markers_written() {
  if (!preparing(m_.state)) return error(TxnError::invalid_txn_state);
  m_.state =
      m_.state == TxnState::prepare_commit ? TxnState::complete_commit : TxnState::complete_abort;
  m_.started_ms = -1;
  TxnOutcome o;
  o.persist = true;
  return o;
}

TxnOutcome TxnStateMachine::expire_if_timed_out(int64_t now_ms) {
  if (m_.state != TxnState::ongoing || now_ms - m_.started_ms <= m_.timeout_ms) return {};
  return begin_abort(true);
}

}  // namespace strata::broker::txn
