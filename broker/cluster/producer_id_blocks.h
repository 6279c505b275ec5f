// Producer id blocks for a cluster: `{prefix}/producer_id_block` holds the next free id, and a
// broker reserves a block by compare-and-swap on it (Kafka's /latest_producer_id_block), so ids are
// unique across brokers and restarts. A lost race re-reads and tries again; an etcd error fails
// the reservation (InitProducerId answers COORDINATOR_NOT_AVAILABLE and the client retries).
// Thread-safe.
#pragma once

#include "broker/cluster/coordination.h"
#include "broker/cluster/records.h"
#include "broker/txn/producer_ids.h"

namespace strata::broker::cluster {

class EtcdProducerIdBlocks : public ProducerIdBlocks {
 public:
  EtcdProducerIdBlocks(Coordination& coordination, Layout layout)
      : coordination_(coordination), layout_(std::move(layout)) {}
  Result<int64_t> reserve(int64_t size) override;

 private:
  Coordination& coordination_;
  const Layout layout_;
};

}  // namespace strata::broker::cluster
