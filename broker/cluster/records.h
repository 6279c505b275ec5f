// What a Strata cluster keeps in etcd, and where. Every value is a JSON object (readable with
// `etcdctl get --prefix /strata`); unknown fields are ignored on read so a newer broker can add
// some. All keys sit under a prefix (`coordination.etcd.prefix`) so clusters can share an etcd:
//
//   {prefix}/brokers/{id}               BrokerRecord     bound to the broker's lease
//   {prefix}/controller                 ControllerRecord bound to the controller's lease
//   {prefix}/controller_epoch           {"epoch": N}     bumped by each new controller (fencing)
//   {prefix}/topics/{name}              TopicRecord      written by the controller
//   {prefix}/partitions/{name}/{index}  PartitionState   compare-and-swap only
//   {prefix}/producer_id_block          {"next": N}      compare-and-swap only
//
// Pure data and functions; any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::broker::cluster {

struct BrokerRecord {
  int32_t id = -1;
  std::string host;
  int32_t port = 0;
  std::string rack;            // empty = no rack
  bool shutting_down = false;  // a clean shutdown asks the controller to move leadership away
  // Every listener's advertised address, "host:port" by listener name (host/port above are the
  // inter-broker listener's); clients are given the one of the listener they came in on.
  std::map<std::string, std::string> endpoints;

  bool operator==(const BrokerRecord&) const = default;
};

// The address of `listener` on broker `r`: its endpoint when it registered one, else host/port.
inline std::pair<std::string, int32_t> endpoint_for(const BrokerRecord& r,
                                                    const std::string& listener) {
  auto it = r.endpoints.find(listener);
  if (it != r.endpoints.end()) {
    auto colon = it->second.rfind(':');
    if (colon != std::string::npos) {
      int32_t port = 0;
      for (char c : it->second.substr(colon + 1)) {
        if (c < '0' || c > '9' || port > 65535) return {r.host, r.port};
        port = port * 10 + (c - '0');
      }
      if (port > 0 && port <= 65535) return {it->second.substr(0, colon), port};
    }
  }
  return {r.host, r.port};
}

struct ControllerRecord {
  int32_t id = -1;
  int64_t epoch = 0;

  bool operator==(const ControllerRecord&) const = default;
};

struct TopicRecord {
  std::string name;
  std::string topic_id;                        // Kafka's 22-char form (protocol/wire/uuid.h)
  std::vector<std::vector<int32_t>> replicas;  // per partition, preferred leader first
  std::map<std::string, std::string> configs;  // topic-level overrides

  bool operator==(const TopicRecord&) const = default;
};

// Kafka's partition state: who leads, under which epoch, and who is in sync. leader_epoch changes
// with every leader change; partition_epoch with every change at all (ISR included).
// A reassignment in progress (KIP-455) names the replicas being added and removed; meanwhile the
// topic record's replica list is target + (original - target), so every replica of either set
// replicates. Both lists are empty (and absent from the JSON) otherwise.
struct PartitionState {
  int32_t leader = -1;  // -1 = offline (no in-sync replica alive)
  int32_t leader_epoch = 0;
  std::vector<int32_t> isr;
  int32_t partition_epoch = 0;
  std::vector<int32_t> adding_replicas = {};
  std::vector<int32_t> removing_replicas = {};

  bool operator==(const PartitionState&) const = default;
};

class Layout {
 public:
  explicit Layout(std::string prefix);  // trailing '/' dropped

  std::string brokers() const { return prefix_ + "/brokers/"; }
  std::string broker(int32_t id) const;
  std::string controller() const { return prefix_ + "/controller"; }
  std::string controller_epoch() const { return prefix_ + "/controller_epoch"; }
  std::string topics() const { return prefix_ + "/topics/"; }
  std::string topic(const std::string& name) const { return topics() + name; }
  std::string partitions() const { return prefix_ + "/partitions/"; }
  std::string partitions_of(const std::string& name) const { return partitions() + name + "/"; }
  std::string partition(const std::string& name, int32_t index) const;
  std::string producer_id_block() const { return prefix_ + "/producer_id_block"; }
  const std::string& prefix() const { return prefix_; }

  // The broker id, topic name or (topic, partition) a key under brokers()/topics()/partitions()
  // names; nullopt for anything else.
  std::optional<int32_t> broker_id_of(const std::string& key) const;
  std::optional<std::string> topic_of(const std::string& key) const;
  std::optional<std::pair<std::string, int32_t>> partition_of(const std::string& key) const;

 private:
  std::string prefix_;
};

std::string encode(const BrokerRecord& r);
std::string encode(const ControllerRecord& r);
std::string encode(const TopicRecord& r);
std::string encode(const PartitionState& s);
std::string encode_counter(const char* field, int64_t value);

Result<BrokerRecord> decode_broker(const std::string& json);
Result<ControllerRecord> decode_controller(const std::string& json);
Result<TopicRecord> decode_topic(const std::string& json);
Result<PartitionState> decode_partition(const std::string& json);
Result<int64_t> decode_counter(const std::string& json, const char* field);

}  // namespace strata::broker::cluster
