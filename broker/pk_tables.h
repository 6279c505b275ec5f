// PkTables: the broker's primary-key table service (issue 5). Owns the shared RocksDB resources
// (pkindex::PkEnvironment) and one pkindex::PkState per partition of every topic created with
// table.type=primary-key. States of existing PK topics are opened (and recovered by log replay) at
// start; a new PK topic's states open on first use. Owned by Broker (constructed after the
// TopicRegistry, closed after the io threads joined and before the logs close). Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "broker/topic_registry.h"
#include "pkindex/pk_environment.h"
#include "pkindex/pk_state.h"
#include "protocol/base/result.h"

namespace strata::broker {

class PkTables {
 public:
  explicit PkTables(TopicRegistry& topics);
  ~PkTables();

  // Opens every partition of every PK topic the registry knows.
  Status open_all();
  // The state of `partition` of `topic`: nullptr when the topic is not a PK table; an error when
  // the partition does not exist or its state cannot be opened/recovered.
  Result<std::shared_ptr<pkindex::PkState>> get(const TopicEntry& topic, int32_t partition);
  // The parsed table config of a PK topic (nullopt for a log topic or invalid configs).
  static std::optional<pkindex::TableConfig> table_config(const TopicEntry& topic);
  // The topic is being deleted: closes and forgets its states (before its directories go).
  void drop(const TopicEntry& topic);
  // Closes (flushing) every state. Later get() calls fail with Errc::shutting_down.
  Status close_all();

 private:
  TopicRegistry& topics_;
  pkindex::PkEnvironment env_;
  std::mutex mu_;
  bool closed_ = false;
  // Key: topic id bytes + partition index.
  std::map<std::pair<std::string, int32_t>, std::shared_ptr<pkindex::PkState>> states_;
};

}  // namespace strata::broker
