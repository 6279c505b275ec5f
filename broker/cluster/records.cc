#include "broker/cluster/records.h"

#include <charconv>
#include <nlohmann/json.hpp>

namespace strata::broker::cluster {

using json = nlohmann::json;

namespace {

std::optional<int32_t> parse_id(std::string_view s) {
  int32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

Result<json> parse_object(const std::string& text, const char* what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status(Errc::corruption,
                  std::string("cluster ") + what + " record is not a JSON object");
  }
  return j;
}

// Reads a field of the expected JSON type, keeping `out` when the field is absent.
template <typename T>
Status field(const json& j, const char* name, T& out, const char* what) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return Status::Ok();
  try {
    out = it->get<T>();
  } catch (const json::exception&) {
    return Status(Errc::corruption,
                  std::string("cluster ") + what + " record: field " + name + " has a wrong type");
  }
  return Status::Ok();
}

}  // namespace

Layout::Layout(std::string prefix) : prefix_(std::move(prefix)) {
  while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
}

std::string Layout::broker(int32_t id) const {
  std::string k = brokers();
  k.append(std::to_string(id));
  return k;
}

std::string Layout::partition(const std::string& name, int32_t index) const {
  std::string k = partitions_of(name);
  k.append(std::to_string(index));
  return k;
}

std::optional<int32_t> Layout::broker_id_of(const std::string& key) const {
  const std::string b = brokers();
  if (key.rfind(b, 0) != 0) return std::nullopt;
  return parse_id(std::string_view(key).substr(b.size()));
}

std::optional<std::string> Layout::topic_of(const std::string& key) const {
  const std::string t = topics();
  if (key.rfind(t, 0) != 0 || key.size() == t.size()) return std::nullopt;
  return key.substr(t.size());
}

std::optional<std::pair<std::string, int32_t>> Layout::partition_of(const std::string& key) const {
  const std::string p = partitions();
  if (key.rfind(p, 0) != 0) return std::nullopt;
  const std::string_view rest = std::string_view(key).substr(p.size());
  const size_t slash = rest.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return std::nullopt;
  auto index = parse_id(rest.substr(slash + 1));
  if (!index || *index < 0) return std::nullopt;
  return std::make_pair(std::string(rest.substr(0, slash)), *index);
}

std::string encode(const BrokerRecord& r) {
  json j = {{"id", r.id}, {"host", r.host}, {"port", r.port}};
  if (!r.rack.empty()) j["rack"] = r.rack;
  if (r.shutting_down) j["shutting_down"] = true;
  if (!r.endpoints.empty()) j["endpoints"] = r.endpoints;
  return j.dump();
}

std::string encode(const ControllerRecord& r) {
  return json({{"id", r.id}, {"epoch", r.epoch}}).dump();
}

std::string encode(const TopicRecord& r) {
  return json({{"name", r.name},
               {"topic_id", r.topic_id},
               {"replicas", r.replicas},
               {"configs", r.configs}})
      .dump();
}

std::string encode(const PartitionState& s) {
  json j = {{"leader", s.leader},
            {"leader_epoch", s.leader_epoch},
            {"isr", s.isr},
            {"partition_epoch", s.partition_epoch}};
  if (!s.adding_replicas.empty()) j["adding_replicas"] = s.adding_replicas;
  if (!s.removing_replicas.empty()) j["removing_replicas"] = s.removing_replicas;
  return j.dump();
}

std::string encode_counter(const char* field, int64_t value) {
  return json({{field, value}}).dump();
}

Result<BrokerRecord> decode_broker(const std::string& text) {
  auto j = parse_object(text, "broker");
  if (!j.ok()) return j.status();
  BrokerRecord r;
  STRATA_RETURN_IF_ERROR(field(*j, "id", r.id, "broker"));
  STRATA_RETURN_IF_ERROR(field(*j, "host", r.host, "broker"));
  STRATA_RETURN_IF_ERROR(field(*j, "port", r.port, "broker"));
  STRATA_RETURN_IF_ERROR(field(*j, "rack", r.rack, "broker"));
  STRATA_RETURN_IF_ERROR(field(*j, "shutting_down", r.shutting_down, "broker"));
  if (auto e = j->find("endpoints"); e != j->end()) {
    if (!e->is_object()) return Status(Errc::corruption, "cluster broker record: bad endpoints");
    for (const auto& [name, addr] : e->items()) {
      if (!addr.is_string()) return Status(Errc::corruption, "cluster broker record: bad endpoint");
      r.endpoints[name] = addr.get<std::string>();
    }
  }
  if (r.id < 0) return Status(Errc::corruption, "cluster broker record without an id");
  return r;
}

Result<ControllerRecord> decode_controller(const std::string& text) {
  auto j = parse_object(text, "controller");
  if (!j.ok()) return j.status();
  ControllerRecord r;
  STRATA_RETURN_IF_ERROR(field(*j, "id", r.id, "controller"));
  STRATA_RETURN_IF_ERROR(field(*j, "epoch", r.epoch, "controller"));
  return r;
}

Result<TopicRecord> decode_topic(const std::string& text) {
  auto j = parse_object(text, "topic");
  if (!j.ok()) return j.status();
  TopicRecord r;
  STRATA_RETURN_IF_ERROR(field(*j, "name", r.name, "topic"));
  STRATA_RETURN_IF_ERROR(field(*j, "topic_id", r.topic_id, "topic"));
  STRATA_RETURN_IF_ERROR(field(*j, "replicas", r.replicas, "topic"));
  STRATA_RETURN_IF_ERROR(field(*j, "configs", r.configs, "topic"));
  if (r.name.empty()) return Status(Errc::corruption, "cluster topic record without a name");
  return r;
}

Result<PartitionState> decode_partition(const std::string& text) {
  auto j = parse_object(text, "partition");
  if (!j.ok()) return j.status();
  PartitionState s;
  STRATA_RETURN_IF_ERROR(field(*j, "leader", s.leader, "partition"));
  STRATA_RETURN_IF_ERROR(field(*j, "leader_epoch", s.leader_epoch, "partition"));
  STRATA_RETURN_IF_ERROR(field(*j, "isr", s.isr, "partition"));
  STRATA_RETURN_IF_ERROR(field(*j, "partition_epoch", s.partition_epoch, "partition"));
  STRATA_RETURN_IF_ERROR(field(*j, "adding_replicas", s.adding_replicas, "partition"));
  STRATA_RETURN_IF_ERROR(field(*j, "removing_replicas", s.removing_replicas, "partition"));
  return s;
}

Result<int64_t> decode_counter(const std::string& text, const char* name) {
  auto j = parse_object(text, "counter");
  if (!j.ok()) return j.status();
  int64_t v = 0;
  STRATA_RETURN_IF_ERROR(field(*j, name, v, "counter"));
  return v;
}

}  // namespace strata::broker::cluster
