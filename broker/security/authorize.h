// The one check every request handler makes before touching a resource, as Kafka's
// AuthHelper.authorize: Services::authorizer decides for the connection's principal and host
// (ctx.principal() / ctx.client_host(); read where the handler runs, so before it goes
// asynchronous). No authorizer configured = everything is allowed.
// A denial is counted (strata_authorization_denials_total, by API) and audited: one log line per
// second at most for each principal + operation, carrying how many denials it stands for.
// Listings that only leave out what the principal may not see (Metadata of all topics,
// ListGroups) use may(), which neither counts nor audits — as Kafka's logIfDenied = false.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "broker/security/acl.h"

namespace strata::broker {

struct RequestContext;
struct Services;

using security::AclOperation;
using security::ResourceType;

bool authorizer_enabled(const RequestContext& ctx);

// Whether the request's principal may do `op` on the resource; a denial is counted and audited.
bool authorize(const RequestContext& ctx, AclOperation op, ResourceType type,
               const std::string& name);
inline bool authorize_cluster(const RequestContext& ctx, AclOperation op) {
  return authorize(ctx, op, ResourceType::cluster, security::kClusterName);
}
inline bool authorize_topic(const RequestContext& ctx, AclOperation op, const std::string& name) {
  return authorize(ctx, op, ResourceType::topic, name);
}
inline bool authorize_group(const RequestContext& ctx, AclOperation op, const std::string& name) {
  return authorize(ctx, op, ResourceType::group, name);
}
// As authorize(), but a denial is neither counted nor audited (filtering a listing).
bool may(const RequestContext& ctx, AclOperation op, ResourceType type, const std::string& name);
// `op` on at least one resource of `type` (KIP-679); a denial is counted and audited.
bool authorize_any(const RequestContext& ctx, AclOperation op, ResourceType type);

namespace security {
// Rate-limits audit lines: log(key) says whether to write a line now, and how many denials of
// `key` went unlogged before it. Thread-safe.
class DenialAudit {
 public:
  explicit DenialAudit(int64_t interval_ms = 1000) : interval_ms_(interval_ms) {}
  // now_ms: a steady clock. Returns -1 = stay quiet, else the suppressed count to report.
  int64_t admit(const std::string& key, int64_t now_ms);

 private:
  struct Entry {
    int64_t last_ms = 0;
    int64_t suppressed = 0;
  };
  const int64_t interval_ms_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};
}  // namespace security

}  // namespace strata::broker
