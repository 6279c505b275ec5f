// What the transaction coordinator does to the rest of a single-node broker: markers appended to
// the partitions' logs, committed offsets handed to the group coordinator, producer ids from the
// ProducerIdManager.
#pragma once

#include "broker/txn/txn_coordinator.h"

namespace strata::broker {
class TopicRegistry;
class ProducerIdManager;
namespace group {
class GroupCoordinator;
}
}  // namespace strata::broker

namespace strata::broker::txn {

class BrokerTxnEffects : public TxnEffects {
 public:
  BrokerTxnEffects(TopicRegistry& topics, group::GroupCoordinator& groups,
                   ProducerIdManager& producer_ids)
      : topics_(topics), groups_(groups), producer_ids_(producer_ids) {}
  bool write_marker(const TopicPartition& tp, int64_t producer_id, int16_t epoch,
                    bool commit) override;
  void commit_offsets(const std::string& group, std::vector<PendingOffset> offsets,
                      std::function<void()> done) override;
  Result<int64_t> new_producer_id() override;

 private:
  TopicRegistry& topics_;
  group::GroupCoordinator& groups_;
  ProducerIdManager& producer_ids_;
};

// The coordinator's state lives in memory, so a transaction found open on a partition when the
// broker starts belongs to no coordinator any more: nobody can commit it, and it would hold the
// partition's last stable offset (read_committed consumers) forever. Writes an ABORT marker for
// each such transaction (oldest first, the producer's current epoch). Returns how many.
size_t abort_orphaned_transactions(TopicRegistry& topics);

}  // namespace strata::broker::txn
