// The records of the transaction-state topic (`__transaction_state`), where the transaction
// coordinator keeps its durable state: the newest record of a key wins (the topic is compacted)
// and a null value (tombstone) deletes.
//
// State record — Kafka's TransactionLogKey / TransactionLogValue v0, so the topic reads as a Java
// broker's (integers big-endian, string = int16 length + bytes):
//   key:   int16 version (0), string transactional_id
//   value: int16 version (0), int64 producer_id, int16 producer_epoch, int32 timeout_ms,
//          int8 status (0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort, 4 CompleteCommit,
//          5 CompleteAbort), int32 topic count (-1 = null) x (string topic, int32 count x int32
//          partition), int64 last_update_ms, int64 start_ms
// Offsets record — Strata's own, for the consumer offsets of an open transaction (Kafka writes
// them to __consumer_offsets as transactional records; here the coordinator holds them until the
// commit, so they must survive with its state). Key version 0x5354 ("ST"): a Java broker's loader
// skips a key version it does not know.
//   key:   int16 version (0x5354), string transactional_id
//   value: int16 version (0), int32 group count x (string group, int32 offset count x (string
//          topic, int32 partition, int64 offset, int32 leader_epoch, int16 metadata length (-1 =
//          null) + bytes))
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "broker/txn/txn_coordinator.h"

namespace strata::broker::txn::records {

// The groups of an open transaction (AddOffsetsToTxn) with the offsets committed in it so far.
using TxnOffsets = std::map<std::string, std::map<TopicPartition, PendingOffset>>;

enum class KeyKind { state, offsets };
struct Key {
  KeyKind kind = KeyKind::state;
  std::string txn_id;
};

std::string state_key(std::string_view txn_id);
std::string offsets_key(std::string_view txn_id);
// nullopt for a key of neither kind (another version, or malformed bytes).
std::optional<Key> decode_key(std::string_view key);

std::string encode_state(const TxnMetadata& m, int64_t last_update_ms);
// False when the bytes are not a state value this broker reads.
bool decode_state(std::string_view value, TxnMetadata& m, int64_t& last_update_ms);

std::string encode_offsets(const TxnOffsets& offsets);
bool decode_offsets(std::string_view value, TxnOffsets& offsets);

// Kafka's status byte of a state, and back (nullopt for Dead / PrepareEpochFence and unknown
// values, which this coordinator never writes).
int8_t status_byte(TxnState s);
std::optional<TxnState> state_of_status(int8_t status);

}  // namespace strata::broker::txn::records
