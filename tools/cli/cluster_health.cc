#include "tools/cli/cluster_health.h"

#include "protocol/wire/errors.h"

namespace strata::cli {
namespace {

// "1,2,3"; "-" for an empty list so table columns never go blank.
std::string ids_text(const std::vector<int32_t>& v) {
  if (v.empty()) return "-";
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(v[i]));
  }
  return s;
}

std::string status_text(const UnhealthyPartition& u) {
  if (u.offline && u.under_replicated) return "offline,under-replicated";
  return u.offline ? "offline" : "under-replicated";
}

std::string error_name(int16_t code) {
  const auto e = protocol::error_from_code(code);
  if (!e) {
    std::string s("error ");
    s.append(std::to_string(code));
    return s;
  }
  return protocol::error_name(*e);
}

}  // namespace

ClusterHealth compute_health(const client::ClusterMetadata& md) {
  ClusterHealth h;
  for (const auto& t : md.topics) {
    ++h.topics;
    if (t.error_code != 0) h.topic_errors.push_back({t.name, error_name(t.error_code)});
    for (const auto& p : t.partitions) {
      ++h.partitions;
      UnhealthyPartition u;
      u.under_replicated = p.isr.size() < p.replicas.size();
      u.offline = p.leader < 0;
      if (u.under_replicated) ++h.under_replicated;
      if (u.offline) ++h.offline;
      if (!u.under_replicated && !u.offline) continue;
      u.topic = t.name;
      u.info = p;
      h.unhealthy.push_back(std::move(u));
    }
  }
  return h;
}

std::string broker_address(const client::BrokerInfo& b) {
  std::string s;
  if (b.host.find(':') != std::string::npos) {
    s.push_back('[');
    s.append(b.host);
    s.push_back(']');
  } else {
    s.append(b.host);
  }
  s.push_back(':');
  s.append(std::to_string(b.port));
  return s;
}

void print_cluster_text(std::ostream& os, const client::ClusterMetadata& cluster,
                        const ClusterHealth& h, bool show_partitions) {
  os << "cluster " << cluster.cluster_id << "  controller " << cluster.controller_id << "\n\n";
  TextTable bt({"NODE", "ADDRESS", "RACK"});
  for (const auto& b : cluster.brokers) {
    bt.add({std::to_string(b.node_id), broker_address(b), b.rack.value_or("-")});
  }
  bt.print(os);
  os << "\npartitions: " << h.partitions << " in " << h.topics
     << (h.topics == 1 ? " topic, " : " topics, ") << h.under_replicated << " under-replicated, "
     << h.offline << " offline\n";
  for (const auto& e : h.topic_errors) os << "topic " << e.topic << ": " << e.error << "\n";
  if (!show_partitions && h.unhealthy.empty()) return;
  os << "\n";
  if (h.unhealthy.empty()) {
    os << "no under-replicated or offline partitions\n";
    return;
  }
  TextTable pt({"TOPIC", "PARTITION", "LEADER", "LEADER-EPOCH", "REPLICAS", "ISR",
                "OFFLINE-REPLICAS", "STATUS"});
  for (const auto& u : h.unhealthy) {
    const auto& p = u.info;
    pt.add({u.topic, std::to_string(p.partition), std::to_string(p.leader),
            std::to_string(p.leader_epoch), ids_text(p.replicas), ids_text(p.isr),
            ids_text(p.offline_replicas), status_text(u)});
  }
  pt.print(os);
}

json cluster_json(const client::ClusterMetadata& cluster, const ClusterHealth& h) {
  json brokers = json::array();
  for (const auto& b : cluster.brokers) {
    brokers.push_back(
        {{"node_id", b.node_id}, {"host", b.host}, {"port", b.port}, {"rack", jbytes(b.rack)}});
  }
  json unhealthy = json::array();
  for (const auto& u : h.unhealthy) {
    const auto& p = u.info;
    unhealthy.push_back({{"topic", u.topic},
                         {"partition", p.partition},
                         {"leader", p.leader},
                         {"leader_epoch", p.leader_epoch},
                         {"replicas", p.replicas},
                         {"isr", p.isr},
                         {"offline_replicas", p.offline_replicas},
                         {"under_replicated", u.under_replicated},
                         {"offline", u.offline}});
  }
  json topic_errors = json::array();
  for (const auto& e : h.topic_errors)
    topic_errors.push_back({{"topic", e.topic}, {"error", e.error}});
  return {{"cluster_id", cluster.cluster_id},
          {"controller_id", cluster.controller_id},
          {"brokers", brokers},
          {"health",
           {{"topics", h.topics},
            {"partitions", h.partitions},
            {"under_replicated", h.under_replicated},
            {"offline", h.offline}}},
          {"unhealthy_partitions", unhealthy},
          {"topic_errors", topic_errors}};
}

}  // namespace strata::cli
