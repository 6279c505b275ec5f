// The transaction coordinator's state machine for one transactional id, with Kafka's states and
// transitions (TransactionMetadata / TransactionCoordinator):
//
//   Empty ──AddPartitions──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers──▶ CompleteCommit
//     ▲                        │  └────EndTxn(abort) / timeout──▶ PrepareAbort ──markers──▶
//     CompleteAbort └──InitProducerId────────┴─ (from Empty/Complete*: epoch + 1; from Ongoing:
//     abort first)
//
// Each call returns what the coordinator must do — persist the new state before answering, write
// COMMIT/ABORT markers to the transaction's partitions — or the error to answer. Producer epochs
// only grow; a request from an older epoch is fenced. Pure: no I/O, no clock (callers pass now).
// Not thread-safe (the coordinator serialises per transactional id).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace strata::broker::txn {

enum class TxnState {
  empty,
  ongoing,
  prepare_commit,
  prepare_abort,
  complete_commit,
  complete_abort
};
const char* txn_state_name(TxnState s);

// The coordinator-level errors (the handler picks the Kafka code per request version, e.g.
// PRODUCER_FENCED vs INVALID_PRODUCER_EPOCH).
enum class TxnError {
  none,
  concurrent_transactions,  // a commit/abort is being completed: retry
  producer_fenced,          // an older epoch: a newer producer took over this transactional id
  invalid_producer_id_mapping,
  invalid_txn_state,  // e.g. EndTxn without a transaction, or commit after abort
  invalid_transaction_timeout,
  coordinator_not_available,     // the state could not be made durable: retry
  not_coordinator,               // this broker does not lead the id's __transaction_state partition
  coordinator_load_in_progress,  // it does, and is still loading that partition
};

using TopicPartition = std::pair<std::string, int32_t>;

inline bool is_prepare(TxnState s) {
  return s == TxnState::prepare_commit || s == TxnState::prepare_abort;
}
// A transaction is open until its markers are written (Ongoing or Prepare*).
inline bool is_open(TxnState s) { return s == TxnState::ongoing || is_prepare(s); }

struct TxnMetadata {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t timeout_ms = 60000;
  TxnState state = TxnState::empty;
  std::set<TopicPartition> partitions;  // of the open (or completing) transaction
  int64_t started_ms = -1;              // when it became Ongoing
  bool operator==(const TxnMetadata&) const = default;
};

struct TxnOutcome {
  TxnError error = TxnError::none;
  bool persist = false;  // write `metadata` durably before answering
  // Markers to write (commit or abort) to these partitions, then call markers_written().
  std::optional<bool> write_markers_commit;
  std::vector<TopicPartition> marker_partitions;
};

struct TxnLimits {
  int32_t max_timeout_ms = 900000;  // transaction.max.timeout.ms
};

class TxnStateMachine {
 public:
  explicit TxnStateMachine(TxnLimits limits = {}) : limits_(limits) {}
  // Restores a persisted state (recovery); a Prepare* state still needs its markers.
  void restore(TxnMetadata m) { m_ = std::move(m); }
  const TxnMetadata& metadata() const { return m_; }

  // InitProducerId for this transactional id. `new_producer_id` is used the first time (or when
  // the epoch is exhausted). An open transaction is aborted first: the answer is
  // CONCURRENT_TRANSACTIONS until its markers are written, and the client retries.
  TxnOutcome init_producer_id(int32_t timeout_ms, int64_t new_producer_id, int64_t now_ms);
  TxnOutcome add_partitions(int64_t producer_id, int16_t epoch,
                            const std::vector<TopicPartition>& partitions, int64_t now_ms);
  TxnOutcome end_txn(int64_t producer_id, int16_t epoch, bool commit);
  // The markers of a Prepare* state are written: complete it.
  TxnOutcome markers_written();
  // A transaction open longer than its timeout is aborted, fencing its producer (epoch + 1).
  TxnOutcome expire_if_timed_out(int64_t now_ms);
  // Whether (producer_id, epoch) is this id's current producer (error none), an older instance
  // (producer_fenced) or someone else (invalid_producer_id_mapping). Changes nothing.
  TxnOutcome check_producer(int64_t producer_id, int16_t epoch) const;

 private:
  TxnOutcome begin_abort(bool bump_epoch);

  TxnLimits limits_;
  TxnMetadata m_;
};

}  // namespace strata::broker::txn
