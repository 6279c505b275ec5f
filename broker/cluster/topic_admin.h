// Topic administration in cluster mode, done by whichever broker received the request, with
// compare-and-swap in etcd (no forwarding to the controller):
// - create: partition states first (in chunks that fit etcd's --max-txn-ops, each guarded by
//   "topic absent"), the topic record last; brokers act on a topic only once its record exists,
//   so a creator that dies midway leaves nothing visible, and a retry overwrites the leftovers.
// - delete: the topic record first (guarded by its mod_revision), then its partition states.
// - add partitions: new partition states, then the record with the longer replica list, guarded by
//   the record's mod_revision.
// Errors: already_exists (topic exists), not_found, invalid_argument (replication factor above the
// live broker count, fewer partitions than today), io_error (etcd).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "broker/cluster/coordination.h"
#include "broker/cluster/metadata_view.h"

namespace strata::broker::cluster {

struct NewTopic {
  std::string name;
  std::string topic_id;
  int32_t partitions = 1;
  int32_t replication_factor = 1;
  std::vector<std::vector<int32_t>> assignment;  // explicit replicas; empty = assign_replicas
  std::map<std::string, std::string> configs;
};

Result<TopicRecord> create_topic(Coordination& c, const Layout& layout, const ClusterSnapshot& view,
                                 const NewTopic& topic);
Status delete_topic(Coordination& c, const Layout& layout, const ClusterSnapshot& view,
                    const std::string& name);
Result<TopicRecord> add_partitions(Coordination& c, const Layout& layout,
                                   const ClusterSnapshot& view, const std::string& name,
                                   int32_t new_total);

}  // namespace strata::broker::cluster
