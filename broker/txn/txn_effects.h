// What the transaction coordinator does to the rest of a single-node broker: markers appended to
// the partitions (through their primary-key state on PK tables), committed offsets handed to the
// group coordinator, producer ids from the ProducerIdManager.
#pragma once

#include "broker/txn/txn_coordinator.h"

namespace strata::broker {
class TopicRegistry;
class PkTables;
class ProducerIdManager;
namespace group {
class GroupCoordinator;
}
}  // namespace strata::broker

namespace strata::broker::txn {

class BrokerTxnEffects : public TxnEffects {
 public:
  BrokerTxnEffects(TopicRegistry& topics, PkTables& pk_tables, group::GroupCoordinator& groups,
                   ProducerIdManager& producer_ids)
      : topics_(topics), pk_tables_(pk_tables), groups_(groups), producer_ids_(producer_ids) {}
  bool write_marker(const TopicPartition& tp, int64_t producer_id, int16_t epoch,
                    bool commit) override;
  void commit_offsets(const std::string& group, std::vector<PendingOffset> offsets,
                      std::function<void()> done) override;
  Result<int64_t> new_producer_id() override;

 private:
  TopicRegistry& topics_;
  PkTables& pk_tables_;
  group::GroupCoordinator& groups_;
  ProducerIdManager& producer_ids_;
};

// A transaction open on a partition that no coordinator state owns — left by a broker whose
// transaction state was lost or predates it (transactions were not persisted before), or by a
// producer whose transactional id was removed — would hold the partition's last stable offset
// (read_committed consumers) forever: nobody can end it. At start, after the coordinator's load,
// writes an ABORT marker (the producer's current epoch) for every open transaction whose
// (producer id, partition) is not in `owned`. Returns how many.
size_t abort_orphaned_transactions(TopicRegistry& topics, PkTables& pk_tables,
                                   const std::set<std::pair<int64_t, TopicPartition>>& owned);

}  // namespace strata::broker::txn
