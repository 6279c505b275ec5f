// meta.properties: Kafka's per-log-dir identity file ("version=1", "cluster.id=<22-char base64url
// uuid>", "node.id=<n>"). Created on first start in every log dir; checked on later starts: a
// node.id mismatch or log dirs that disagree on cluster.id stop startup.
//
// Stateless functions; called by LogManager::open on its opening thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

struct MetaProperties {
  int32_t version = 1;
  std::string cluster_id;
  int32_t node_id = -1;
};

std::string format_meta_properties(const MetaProperties& meta);
// Errc::corruption when a required key is missing or malformed.
Result<MetaProperties> parse_meta_properties(std::string_view text);

// Checks or writes meta.properties in each dir; returns the cluster id (minted when no dir has
// one).
Result<std::string> ensure_meta_properties(Env* env, const std::vector<std::string>& log_dirs,
                                           int32_t node_id);

}  // namespace strata::storage
