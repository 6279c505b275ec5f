// Client: connections, bootstrap, Metadata and routing (see client.h).
#include "tools/client/client.h"

#include <algorithm>

#include "protocol/messages/metadata.h"

namespace strata::client {

const TopicInfo* ClusterMetadata::find_topic(const std::string& name) const {
  for (const auto& t : topics) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const BrokerInfo* ClusterMetadata::find_broker(int32_t node_id) const {
  for (const auto& b : brokers) {
    if (b.node_id == node_id) return &b;
  }
  return nullptr;
}

const char* config_source_name(int8_t source) {
  switch (source) {
    case 1:
      return "TOPIC_CONFIG";
    case 2:
      return "DYNAMIC_BROKER_CONFIG";
    case 3:
      return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case 4:
      return "STATIC_BROKER_CONFIG";
    case 5:
      return "DEFAULT_CONFIG";
    case 6:
      return "DYNAMIC_BROKER_LOGGER_CONFIG";
    case 7:
      return "CLIENT_METRICS_CONFIG";
    case 8:
      return "GROUP_CONFIG";
    default:
      return "UNKNOWN";
  }
}

const char* change_kind_name(ChangeKind k) {
  switch (k) {
    case ChangeKind::insert:
      return "insert";
    case ChangeKind::update:
      return "update";
    case ChangeKind::remove:
      return "delete";
    default:
      return "unspecified";
  }
}

Client::Client(ClientOptions opts) : opts_(std::move(opts)) {}
Client::~Client() = default;

Status Client::connect() {
  auto c = bootstrap_connection();
  return c.ok() ? Status::Ok() : c.status();
}

Result<Connection*> Client::bootstrap_connection() {
  if (bootstrap_ && !bootstrap_->broken()) return bootstrap_.get();
  auto hp = parse_host_port(opts_.bootstrap);
  if (!hp.ok()) return hp.status();
  ConnectionOptions co{opts_.client_id, opts_.connect_timeout_ms, opts_.request_timeout_ms,
                       opts_.security};
  auto c = Connection::open(hp->first, hp->second, co);
  if (!c.ok()) return c.status();
  bootstrap_ = std::move(c.value());
  return bootstrap_.get();
}

Result<Connection*> Client::open_or_reuse(int32_t node_id, const std::string& host, int port) {
  auto it = brokers_.find(node_id);
  if (it != brokers_.end() && !it->second->broken() && it->second->host() == host &&
      it->second->port() == port) {
    return it->second.get();
  }
  ConnectionOptions co{opts_.client_id, opts_.connect_timeout_ms, opts_.request_timeout_ms,
                       opts_.security};
  auto c = Connection::open(host, port, co);
  if (!c.ok()) return c.status();
  Connection* raw = c->get();
  brokers_[node_id] = std::move(c.value());
  return raw;
}

Result<Connection*> Client::broker_connection(int32_t node_id) {
  auto it = broker_addrs_.find(node_id);
  if (it == broker_addrs_.end()) {
    auto md = metadata(std::vector<std::string>{});
    if (!md.ok()) return md.status();
    it = broker_addrs_.find(node_id);
    if (it == broker_addrs_.end()) {
      return kafka_status(8, "broker " + std::to_string(node_id) + " is not in the metadata");
    }
  }
  return open_or_reuse(node_id, it->second.host, it->second.port);
}

Status Client::refresh_topic(const std::string& topic) {
  auto md = metadata(std::vector<std::string>{topic});
  if (!md.ok()) return md.status();
  const TopicInfo* t = md->find_topic(topic);
  if (t == nullptr) return kafka_status(3, "topic '" + topic + "'");
  if (t->error_code != 0) return kafka_status(t->error_code, "topic '" + topic + "'");
  return Status::Ok();
}

Result<Connection*> Client::leader_connection(const std::string& topic, int32_t partition) {
  auto find = [&]() -> int32_t {
    auto t = leaders_.find(topic);
    if (t == leaders_.end()) return -2;
    auto p = t->second.find(partition);
    return p == t->second.end() ? -2 : p->second;
  };
  int32_t leader = find();
  if (leader == -2) {
    STRATA_RETURN_IF_ERROR(refresh_topic(topic));
    leader = find();
  }
  if (leader == -2) {
    return kafka_status(3, "topic '" + topic + "' partition " + std::to_string(partition));
  }
  if (leader < 0) {
    return kafka_status(5, "topic '" + topic + "' partition " + std::to_string(partition));
  }
  return broker_connection(leader);
}

Result<ClusterMetadata> Client::metadata(const std::optional<std::vector<std::string>>& topics) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::MetadataRequest req;
  if (topics) {
    req.topics = std::vector<protocol::MetadataRequest::Topic>{};
    for (const auto& name : *topics) {
      protocol::MetadataRequest::Topic t;
      t.name = name;
      req.topics->push_back(std::move(t));
    }
  } else {
    req.topics = std::nullopt;
  }
  req.allow_auto_topic_creation = false;
  auto reply = (*conn)->call<protocol::MetadataRequest, protocol::MetadataResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& m = reply->msg;
  ClusterMetadata out;
  out.cluster_id = m.cluster_id.value_or("");
  out.controller_id = m.controller_id;
  for (const auto& b : m.brokers) {
    BrokerInfo bi{b.node_id, b.host, b.port, b.rack};
    broker_addrs_[b.node_id] = bi;
    out.brokers.push_back(std::move(bi));
  }
  std::sort(out.brokers.begin(), out.brokers.end(),
            [](const BrokerInfo& a, const BrokerInfo& b) { return a.node_id < b.node_id; });
  for (const auto& t : m.topics) {
    TopicInfo ti;
    ti.name = t.name.value_or("");
    ti.error_code = protocol::error_value(t.error_code);
    ti.internal = t.is_internal;
    if (t.topic_id != protocol::Uuid{}) ti.topic_id = t.topic_id.to_string();
    auto& lmap = leaders_[ti.name];
    if (t.error_code == protocol::ErrorCode::none) lmap.clear();
    for (const auto& p : t.partitions) {
      PartitionInfo pi;
      pi.partition = p.partition_index;
      pi.error_code = protocol::error_value(p.error_code);
      pi.leader = p.leader_id;
      pi.leader_epoch = p.leader_epoch;
      pi.replicas = p.replica_nodes;
      pi.isr = p.isr_nodes;
      pi.offline_replicas = p.offline_replicas;
      lmap[pi.partition] = pi.leader;
      ti.partitions.push_back(std::move(pi));
    }
    if (t.error_code != protocol::ErrorCode::none) leaders_.erase(ti.name);
    std::sort(
        ti.partitions.begin(), ti.partitions.end(),
        [](const PartitionInfo& a, const PartitionInfo& b) { return a.partition < b.partition; });
    out.topics.push_back(std::move(ti));
  }
  std::sort(out.topics.begin(), out.topics.end(),
            [](const TopicInfo& a, const TopicInfo& b) { return a.name < b.name; });
  return out;
}

Result<TopicInfo> Client::topic(const std::string& name) {
  auto md = metadata(std::vector<std::string>{name});
  if (!md.ok()) return md.status();
  const TopicInfo* t = md->find_topic(name);
  if (t == nullptr) return kafka_status(3, "topic '" + name + "'");
  if (t->error_code != 0) return kafka_status(t->error_code, "topic '" + name + "'");
  return *t;
}

}  // namespace strata::client
