// What the transaction coordinator does to the rest of the broker: markers appended to the
// partitions (through their primary-key state on PK tables) — in a cluster sent as WriteTxnMarkers
// to each partition's leader, this broker included, which answers once the marker is replicated —
// committed offsets handed to the group coordinator (in a cluster as EndTxnOffsets to the group's
// coordinator when that is another broker), producer ids from the ProducerIdManager.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "broker/txn/txn_coordinator.h"
#include "protocol/client/connection.h"

namespace strata::broker {
class TopicRegistry;
class PkTables;
class ProducerIdManager;
namespace group {
class GroupCoordinator;
}
namespace cluster {
class ClusterNode;
}
}  // namespace strata::broker

namespace strata::broker::txn {

class BrokerTxnEffects : public TxnEffects {
 public:
  // `cluster` null = a single node (markers appended here); else markers go to the leaders over
  // connections opened with `security` (the inter-broker listener's).
  BrokerTxnEffects(TopicRegistry& topics, PkTables& pk_tables, group::GroupCoordinator& groups,
                   ProducerIdManager& producer_ids, cluster::ClusterNode* cluster = nullptr,
                   client::ClientSecurity security = {})
      : topics_(topics),
        pk_tables_(pk_tables),
        groups_(groups),
        producer_ids_(producer_ids),
        cluster_(cluster),
        security_(std::move(security)) {}
  ~BrokerTxnEffects() override;
  bool write_marker(const TopicPartition& tp, int64_t producer_id, int16_t epoch, bool commit,
                    int32_t coordinator_epoch) override;
  std::vector<bool> write_markers(const std::vector<TopicPartition>& tps, int64_t producer_id,
                                  int16_t epoch, bool commit, int32_t coordinator_epoch) override;
  void commit_offsets(const std::string& group, int64_t producer_id,
                      std::vector<PendingOffset> offsets, std::function<void()> done) override;
  void abort_offsets(const std::string& group, int64_t producer_id) override;
  Result<int64_t> new_producer_id() override;

 private:
  TopicRegistry& topics_;
  PkTables& pk_tables_;
  group::GroupCoordinator& groups_;
  ProducerIdManager& producer_ids_;
  std::vector<bool> write_remote_markers(const std::vector<TopicPartition>& tps,
                                         int64_t producer_id, int16_t epoch, bool commit,
                                         int32_t coordinator_epoch);
  // Cluster: the group's coordinator (-1 = none now), and EndTxnOffsets sent to it (true = done).
  int32_t group_coordinator(const std::string& group);
  bool end_remote_offsets(const std::string& group, int64_t producer_id, bool commit,
                          const std::vector<PendingOffset>& offsets);
  // The open connection to `broker` (conn_mu_ held).
  Result<client::Connection*> connection(int32_t broker, const std::string& host, int32_t port);
  cluster::ClusterNode* const cluster_;
  const client::ClientSecurity security_;
  std::mutex conn_mu_;  // connections_, and one marker request at a time
  std::map<int32_t, std::unique_ptr<client::Connection>> connections_;  // by broker id
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
