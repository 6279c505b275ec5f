// Client: topic, config and cluster administration (see client.h). Sent to the bootstrap broker
// (the controller of a one-node cluster); broker-config calls go to the broker they name.
#include <algorithm>

#include "protocol/messages/create_partitions.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/describe_cluster.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/incremental_alter_configs.h"
#include "tools/client/client.h"

namespace strata::client {
namespace {

std::string resource_ctx(ResourceType type, const std::string& name) {
  return (type == ResourceType::topic ? "topic '" : "broker '") + name + "'";
}

}  // namespace

Result<TopicCreated> Client::create_topic(const TopicSpec& spec) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::CreateTopicsRequest req;
  protocol::CreateTopicsRequest::Topic t;
  t.name = spec.name;
  t.num_partitions = spec.partitions;
  t.replication_factor = spec.replication_factor;
  for (const auto& [k, v] : spec.configs) {
    protocol::CreateTopicsRequest::Config c;
    c.name = k;
    c.value = v;
    t.configs.push_back(std::move(c));
  }
  req.topics.push_back(std::move(t));
  req.timeout_ms = opts_.request_timeout_ms;
  auto reply = (*conn)->call<protocol::CreateTopicsRequest, protocol::CreateTopicsResponse>(req);
  if (!reply.ok()) return reply.status();
  for (const auto& r : reply->msg.topics) {
    if (r.name != spec.name) continue;
    if (r.error_code != protocol::ErrorCode::none) {
      return kafka_status(r.error_code, "topic '" + spec.name + "'", r.error_message.value_or(""));
    }
    TopicCreated out;
    out.name = r.name;
    if (r.topic_id != protocol::Uuid{}) out.topic_id = r.topic_id.to_string();
    out.partitions = r.num_partitions >= 0 ? r.num_partitions : spec.partitions;
    leaders_.erase(spec.name);
    return out;
  }
  return connection_status("CreateTopics response lacks topic '" + spec.name + "'");
}

Status Client::delete_topic(const std::string& name) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::DeleteTopicsRequest req;
  req.topic_names.push_back(name);               // v1-5
  protocol::DeleteTopicsRequest::TopicState ts;  // v6+
  ts.name = name;
  req.topics.push_back(ts);
  req.timeout_ms = opts_.request_timeout_ms;
  auto reply = (*conn)->call<protocol::DeleteTopicsRequest, protocol::DeleteTopicsResponse>(req);
  if (!reply.ok()) return reply.status();
  leaders_.erase(name);
  for (const auto& r : reply->msg.responses) {
    if (r.error_code != protocol::ErrorCode::none) {
      return kafka_status(r.error_code, "topic '" + name + "'", r.error_message.value_or(""));
    }
  }
  if (reply->msg.responses.empty()) return connection_status("empty DeleteTopics response");
  return Status::Ok();
}

Status Client::create_partitions(const std::string& topic, int32_t total_count) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::CreatePartitionsRequest req;
  protocol::CreatePartitionsRequest::Topic t;
  t.name = topic;
  t.count = total_count;
  t.assignments = std::nullopt;
  req.topics.push_back(std::move(t));
  req.timeout_ms = opts_.request_timeout_ms;
  req.validate_only = false;
  auto reply =
      (*conn)->call<protocol::CreatePartitionsRequest, protocol::CreatePartitionsResponse>(req);
  if (!reply.ok()) return reply.status();
  leaders_.erase(topic);
  for (const auto& r : reply->msg.results) {
    if (r.error_code != protocol::ErrorCode::none) {
      return kafka_status(r.error_code, "topic '" + topic + "'", r.error_message.value_or(""));
    }
  }
  return Status::Ok();
}

Result<std::vector<ConfigEntry>> Client::describe_configs(ResourceType type,
                                                          const std::string& name,
                                                          const std::vector<std::string>& keys) {
  Result<Connection*> conn = bootstrap_connection();
  if (type == ResourceType::broker && !name.empty()) {
    const auto id = parse_node_id(name);
    if (!id) return Status(Errc::invalid_argument, "INVALID_REQUEST: broker id '" + name + "'");
    conn = broker_connection(*id);
  }
  if (!conn.ok()) return conn.status();
  protocol::DescribeConfigsRequest req;
  protocol::DescribeConfigsRequest::Resource r;
  r.resource_type = static_cast<int8_t>(type);
  r.resource_name = name;
  if (keys.empty()) {
    r.configuration_keys = std::nullopt;
  } else {
    r.configuration_keys = keys;
  }
  req.resources.push_back(std::move(r));
  auto reply =
      (*conn)->call<protocol::DescribeConfigsRequest, protocol::DescribeConfigsResponse>(req);
  if (!reply.ok()) return reply.status();
  std::vector<ConfigEntry> out;
  for (const auto& res : reply->msg.results) {
    if (res.error_code != protocol::ErrorCode::none) {
      return kafka_status(res.error_code, resource_ctx(type, name), res.error_message.value_or(""));
    }
    for (const auto& c : res.configs) {
      ConfigEntry e;
      e.name = c.name;
      e.value = c.value;
      e.read_only = c.read_only;
      e.sensitive = c.is_sensitive;
      e.source = c.config_source;
      out.push_back(std::move(e));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const ConfigEntry& a, const ConfigEntry& b) { return a.name < b.name; });
  return out;
}

Status Client::alter_configs(ResourceType type, const std::string& name,
                             const std::vector<ConfigChange>& changes) {
  Result<Connection*> conn = bootstrap_connection();
  if (type == ResourceType::broker && !name.empty()) {
    const auto id = parse_node_id(name);
    if (!id) return Status(Errc::invalid_argument, "INVALID_REQUEST: broker id '" + name + "'");
    conn = broker_connection(*id);
  }
  if (!conn.ok()) return conn.status();
  protocol::IncrementalAlterConfigsRequest req;
  protocol::IncrementalAlterConfigsRequest::Resource r;
  r.resource_type = static_cast<int8_t>(type);
  r.resource_name = name;
  for (const auto& ch : changes) {
    protocol::IncrementalAlterConfigsRequest::Config c;
    c.name = ch.name;
    c.config_operation = static_cast<int8_t>(ch.op);
    c.value = ch.value;
    r.configs.push_back(std::move(c));
  }
  req.resources.push_back(std::move(r));
  req.validate_only = false;
  auto reply = (*conn)
                   ->call<protocol::IncrementalAlterConfigsRequest,
                          protocol::IncrementalAlterConfigsResponse>(req);
  if (!reply.ok()) return reply.status();
  for (const auto& res : reply->msg.responses) {
    if (res.error_code != protocol::ErrorCode::none) {
      return kafka_status(res.error_code, resource_ctx(type, name), res.error_message.value_or(""));
    }
  }
  return Status::Ok();
}

Result<ClusterMetadata> Client::describe_cluster() {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  if (!(*conn)->supports(protocol::DescribeClusterRequest::kApiKey)) {
    auto md = metadata(std::vector<std::string>{});
    if (!md.ok()) return md.status();
    return md;
  }
  protocol::DescribeClusterRequest req;
  auto reply =
      (*conn)->call<protocol::DescribeClusterRequest, protocol::DescribeClusterResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& m = reply->msg;
  if (m.error_code != protocol::ErrorCode::none) {
    return kafka_status(m.error_code, "DescribeCluster", m.error_message.value_or(""));
  }
  ClusterMetadata out;
  out.cluster_id = m.cluster_id;
  out.controller_id = m.controller_id;
  for (const auto& b : m.brokers) {
    out.brokers.push_back(BrokerInfo{b.broker_id, b.host, b.port, b.rack});
    broker_addrs_[b.broker_id] = out.brokers.back();
  }
  std::sort(out.brokers.begin(), out.brokers.end(),
            [](const BrokerInfo& a, const BrokerInfo& b) { return a.node_id < b.node_id; });
  return out;
}

}  // namespace strata::client
