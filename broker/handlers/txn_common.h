// What the transaction APIs share: the coordinator's error mapped to Kafka's code for the request
// version, and the answer when this broker has no transaction coordinator (cluster mode).
#pragma once

#include "broker/txn/txn_state.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

// `fenced_from`: the first version of the API whose clients know PRODUCER_FENCED (Kafka's message
// definitions: InitProducerId v4, AddPartitionsToTxn/AddOffsetsToTxn/EndTxn v2; never for
// TxnOffsetCommit v0-3); older ones get INVALID_PRODUCER_EPOCH.
inline protocol::ErrorCode txn_error_code(txn::TxnError e, int16_t version, int16_t fenced_from) {
  using protocol::ErrorCode;
  switch (e) {
    case txn::TxnError::none:
      return ErrorCode::none;
    case txn::TxnError::concurrent_transactions:
      return ErrorCode::concurrent_transactions;
    case txn::TxnError::producer_fenced:
      return fenced_from >= 0 && version >= fenced_from ? ErrorCode::producer_fenced
                                                        : ErrorCode::invalid_producer_epoch;
    case txn::TxnError::invalid_producer_id_mapping:
      return ErrorCode::invalid_producer_id_mapping;
    case txn::TxnError::invalid_txn_state:
      return ErrorCode::invalid_txn_state;
    case txn::TxnError::invalid_transaction_timeout:
      return ErrorCode::invalid_transaction_timeout;
    case txn::TxnError::coordinator_not_available:
      return ErrorCode::coordinator_not_available;
    case txn::TxnError::not_coordinator:
      return ErrorCode::not_coordinator;
    case txn::TxnError::coordinator_load_in_progress:
      return ErrorCode::coordinator_load_in_progress;
  }
  return ErrorCode::unknown_server_error;
}

// Transactions are served by a single node's coordinator only; a broker of a cluster answers as a
// Kafka broker whose transaction coordinator is not available.
constexpr protocol::ErrorCode kNoTxnCoordinator = protocol::ErrorCode::coordinator_not_available;

}  // namespace strata::broker::handlers
