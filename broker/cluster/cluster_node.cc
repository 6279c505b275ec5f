#include "broker/cluster/cluster_node.h"

#include "broker/cluster/controller.h"
#include "broker/cluster/etcd_client.h"
#include "broker/cluster/membership.h"

namespace strata::broker::cluster {

class ReplicaManager {};

ClusterNode::ClusterNode(ClusterOptions options, TopicRegistry& topics)
    : options_(std::move(options)), layout_(options_.prefix), topics_(topics) {}

ClusterNode::~ClusterNode() { stop(); }

Status ClusterNode::start(const std::string&, int32_t) {
  return Status(Errc::invalid_argument, "cluster mode is not wired yet");
}
void ClusterNode::begin_shutdown(int64_t) {}
void ClusterNode::stop() {}
std::shared_ptr<const ClusterSnapshot> ClusterNode::snapshot() const {
  return view_ ? view_->snapshot() : std::make_shared<const ClusterSnapshot>();
}
Coordination& ClusterNode::coordination() { return *etcd_; }
MetadataView& ClusterNode::view() { return *view_; }
int32_t ClusterNode::controller_id() const { return -1; }
protocol::ErrorCode ClusterNode::leader_check(std::string_view, int32_t, int32_t) const {
  return protocol::ErrorCode::not_leader_or_follower;
}
protocol::ErrorCode ClusterNode::min_isr_check(std::string_view, int32_t, int32_t) const {
  return protocol::ErrorCode::none;
}
std::vector<int32_t> ClusterNode::isr(std::string_view, int32_t) const { return {}; }
void ClusterNode::on_follower_fetch(std::string_view, int32_t, int32_t, int64_t, int64_t) {}
void ClusterNode::on_log_end(const storage::PartitionLog&, int64_t) {}

}  // namespace strata::broker::cluster
