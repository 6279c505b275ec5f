// Client: consumer-group administration (FindCoordinator, ListGroups, DescribeGroups,
// OffsetFetch, OffsetCommit as an admin, DeleteGroups). See client.h.
#include <algorithm>

#include "protocol/messages/delete_groups.h"
#include "protocol/messages/describe_groups.h"
#include "protocol/messages/find_coordinator.h"
#include "protocol/messages/list_groups.h"
#include "protocol/messages/offset_commit.h"
#include "protocol/messages/offset_fetch.h"
#include "tools/client/client.h"

namespace strata::client {
namespace {

std::string group_ctx(const std::string& g) { return "group '" + g + "'"; }

// The consumer protocol's assignment: int16 version, [topic string, [int32 partition]], user data.
std::vector<TopicPartitions> decode_assignment(std::span<const uint8_t> bytes) {
  std::vector<TopicPartitions> out;
  if (bytes.size() < 2) return out;
  try {
    protocol::Reader r(bytes);
    r.read_int16();
    const int32_t n = r.read_array_length();
    for (int32_t i = 0; i < n; ++i) {
      TopicPartitions tp;
      tp.topic = r.read_string();
      const int32_t m = r.read_array_length();
      for (int32_t j = 0; j < m; ++j) tp.partitions.push_back(r.read_int32());
      std::sort(tp.partitions.begin(), tp.partitions.end());
      out.push_back(std::move(tp));
    }
  } catch (const protocol::DecodeError&) {
    // Not the consumer protocol (e.g. a connect group): report no assignment.
  }
  return out;
}

}  // namespace

Result<Connection*> Client::coordinator_connection(const std::string& group) {
  auto cached = coordinators_.find(group);
  if (cached != coordinators_.end()) {
    auto c = broker_connection(cached->second);
    if (c.ok()) return c;
    coordinators_.erase(cached);
  }
  int32_t node = -1;
  auto conn = find_coordinator(group, 0, group_ctx(group), &node);
  if (conn.ok()) coordinators_[group] = node;
  return conn;
}

Result<Connection*> Client::find_coordinator(const std::string& key, int8_t key_type,
                                             const std::string& context, int32_t* node_id) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::FindCoordinatorRequest req;
  req.key = key;
  req.key_type = key_type;
  req.coordinator_keys = {key};
  auto reply =
      (*conn)->call<protocol::FindCoordinatorRequest, protocol::FindCoordinatorResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& m = reply->msg;
  int32_t node = m.node_id;
  std::string host = m.host;
  int32_t port = m.port;
  protocol::ErrorCode err = m.error_code;
  std::string msg = m.error_message.value_or("");
  if (reply->version >= 4) {
    if (m.coordinators.empty()) return connection_status("empty FindCoordinator response");
    const auto& c = m.coordinators.front();
    node = c.node_id;
    host = c.host;
    port = c.port;
    err = c.error_code;
    msg = c.error_message.value_or("");
  }
  if (err != protocol::ErrorCode::none) return kafka_status(err, context, msg);
  broker_addrs_[node] = BrokerInfo{node, host, port, std::nullopt};
  if (node_id) *node_id = node;
  return open_or_reuse(node, host, port);
}

Result<std::vector<GroupListing>> Client::list_groups() {
  auto md = metadata(std::vector<std::string>{});
  if (!md.ok()) return md.status();
  std::vector<GroupListing> out;
  for (const auto& b : md->brokers) {
    auto conn = broker_connection(b.node_id);
    if (!conn.ok()) return conn.status();
    protocol::ListGroupsRequest req;
    auto reply = (*conn)->call<protocol::ListGroupsRequest, protocol::ListGroupsResponse>(req);
    if (!reply.ok()) return reply.status();
    if (reply->msg.error_code != protocol::ErrorCode::none)
      return kafka_status(reply->msg.error_code, "ListGroups");
    for (const auto& g : reply->msg.groups) {
      out.push_back(GroupListing{g.group_id, g.protocol_type, g.group_state});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const GroupListing& a, const GroupListing& b) { return a.group_id < b.group_id; });
  return out;
}

Result<GroupDescription> Client::describe_group(const std::string& group) {
  auto conn = coordinator_connection(group);
  if (!conn.ok()) return conn.status();
  protocol::DescribeGroupsRequest req;
  req.groups = {group};
  auto reply =
      (*conn)->call<protocol::DescribeGroupsRequest, protocol::DescribeGroupsResponse>(req);
  if (!reply.ok()) return reply.status();
  for (const auto& g : reply->msg.groups) {
    if (g.group_id != group) continue;
    if (g.error_code != protocol::ErrorCode::none)
      return kafka_status(g.error_code, group_ctx(group));
    GroupDescription out;
    out.group_id = g.group_id;
    out.state = g.group_state;
    out.protocol_type = g.protocol_type;
    out.protocol = g.protocol_data;
    for (const auto& m : g.members) {
      GroupMember gm;
      gm.member_id = m.member_id;
      gm.group_instance_id = m.group_instance_id;
      gm.client_id = m.client_id;
      gm.client_host = m.client_host;
      if (g.protocol_type == "consumer") gm.assignment = decode_assignment(m.member_assignment);
      out.members.push_back(std::move(gm));
    }
    return out;
  }
  return connection_status("DescribeGroups response lacks " + group_ctx(group));
}

Result<CommittedOffsets> Client::committed_offsets(const std::string& group,
                                                   const std::string& topic) {
  auto conn = coordinator_connection(group);
  if (!conn.ok()) return conn.status();
  std::vector<int32_t> parts;
  if (!topic.empty()) {
    auto info = this->topic(topic);
    if (!info.ok()) return info.status();
    for (const auto& p : info->partitions) parts.push_back(p.partition);
  }
  protocol::OffsetFetchRequest req;
  req.group_id = group;                   // v1-7
  protocol::OffsetFetchRequest::Group g;  // v8+
  g.group_id = group;
  if (topic.empty()) {
    req.topics = std::nullopt;
    g.topics = std::nullopt;
  } else {
    req.topics = std::vector<protocol::OffsetFetchRequest::Topic>{{topic, parts}};
    g.topics = std::vector<protocol::OffsetFetchRequest::GroupTopic>{{topic, parts}};
  }
  req.groups.push_back(std::move(g));
  auto reply = (*conn)->call<protocol::OffsetFetchRequest, protocol::OffsetFetchResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& m = reply->msg;
  CommittedOffsets out;
  if (reply->version >= 8) {
    for (const auto& rg : m.groups) {
      if (rg.error_code != protocol::ErrorCode::none)
        return kafka_status(rg.error_code, group_ctx(group));
      for (const auto& t : rg.topics) {
        for (const auto& p : t.partitions) {
          if (p.error_code != protocol::ErrorCode::none)
            return kafka_status(p.error_code, group_ctx(group));
          out[{t.name, p.partition_index}] = p.committed_offset;
        }
      }
    }
  } else {
    if (m.error_code != protocol::ErrorCode::none)
      return kafka_status(m.error_code, group_ctx(group));
    for (const auto& t : m.topics) {
      for (const auto& p : t.partitions) {
        if (p.error_code != protocol::ErrorCode::none)
          return kafka_status(p.error_code, group_ctx(group));
        out[{t.name, p.partition_index}] = p.committed_offset;
      }
    }
  }
  return out;
}

Status Client::commit_offsets(const std::string& group, const CommittedOffsets& offsets) {
  auto conn = coordinator_connection(group);
  if (!conn.ok()) return conn.status();
  protocol::OffsetCommitRequest req;
  req.group_id = group;
  req.generation_id_or_member_epoch = -1;
  req.member_id = "";
  std::map<std::string, std::vector<protocol::OffsetCommitRequest::Partition>> by_topic;
  for (const auto& [tp, off] : offsets) {
    protocol::OffsetCommitRequest::Partition p;
    p.partition_index = tp.second;
    p.committed_offset = off;
    p.committed_metadata = std::string();
    by_topic[tp.first].push_back(std::move(p));
  }
  for (auto& [name, parts] : by_topic) {
    protocol::OffsetCommitRequest::Topic t;
    t.name = name;
    t.partitions = std::move(parts);
    req.topics.push_back(std::move(t));
  }
  auto reply = (*conn)->call<protocol::OffsetCommitRequest, protocol::OffsetCommitResponse>(req);
  if (!reply.ok()) return reply.status();
  for (const auto& t : reply->msg.topics) {
    for (const auto& p : t.partitions) {
      if (p.error_code != protocol::ErrorCode::none) {
        return kafka_status(p.error_code, group_ctx(group) + " topic '" + t.name + "' partition " +
                                              std::to_string(p.partition_index));
      }
    }
  }
  return Status::Ok();
}

Status Client::delete_group(const std::string& group) {
  auto conn = coordinator_connection(group);
  if (!conn.ok()) return conn.status();
  protocol::DeleteGroupsRequest req;
  req.groups_names = {group};
  auto reply = (*conn)->call<protocol::DeleteGroupsRequest, protocol::DeleteGroupsResponse>(req);
  if (!reply.ok()) return reply.status();
  for (const auto& r : reply->msg.results) {
    if (r.error_code != protocol::ErrorCode::none)
      return kafka_status(r.error_code, group_ctx(group));
  }
  return Status::Ok();
}

}  // namespace strata::client
