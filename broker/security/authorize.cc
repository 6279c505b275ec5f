// The handlers' authorization checks (see authorize.h).
#include "broker/security/authorize.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "broker/handler.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/acl_text.h"
#include "broker/security/security_services.h"
#include "broker/services.h"

namespace strata::broker {
namespace {

// Entries kept at most; past it the table starts over (a flood of distinct principals must not
// grow memory; the worst case is a few extra lines).
constexpr size_t kMaxAuditEntries = 10000;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

security::DenialAudit& audit() {
  static security::DenialAudit a;
  return a;
}

void denied(const RequestContext& ctx, AclOperation op, ResourceType type,
            const std::string& name) {
  ctx.svc.metrics.authorization_denied(ctx.api_key);
  const std::string key = ctx.principal() + '\x1f' + security::name_of(op);
  const int64_t suppressed = audit().admit(key, steady_ms());
  if (suppressed < 0) return;
  spdlog::warn(
      "authorization denied: principal={} host={} operation={} resource={}:{} api={} client_id={}"
      "{}",
      ctx.principal(), ctx.client_host(), security::name_of(op), security::name_of(type), name,
      metrics::api_name(ctx.api_key), ctx.header.client_id.value_or(""),
      suppressed > 0 ? fmt::format(" (+{} more denials of this principal and operation in the "
                                   "last second, not logged)",
                                   suppressed)
                     : std::string());
}

}  // namespace

namespace security {

int64_t DenialAudit::admit(const std::string& key, int64_t now_ms) {
  std::lock_guard lk(mu_);
  if (entries_.size() >= kMaxAuditEntries && !entries_.count(key)) entries_.clear();
  auto [it, fresh] = entries_.try_emplace(key);
  Entry& e = it->second;
  if (!fresh && now_ms - e.last_ms < interval_ms_) {
    ++e.suppressed;
    return -1;
  }
  const int64_t n = e.suppressed;
  e.last_ms = now_ms;
  e.suppressed = 0;
  return n;
}

}  // namespace security

bool authorizer_enabled(const RequestContext& ctx) { return ctx.svc.authorizer != nullptr; }

bool may(const RequestContext& ctx, AclOperation op, ResourceType type, const std::string& name) {
  const security::Authorizer* a = ctx.svc.authorizer;
  return a == nullptr || a->authorize(ctx.principal(), ctx.client_host(), op, type, name);
}

bool authorize(const RequestContext& ctx, AclOperation op, ResourceType type,
               const std::string& name) {
  if (may(ctx, op, type, name)) return true;
  denied(ctx, op, type, name);
  return false;
}

bool authorize_any(const RequestContext& ctx, AclOperation op, ResourceType type) {
  const security::Authorizer* a = ctx.svc.authorizer;
  if (a == nullptr || a->authorize_any(ctx.principal(), ctx.client_host(), op, type)) return true;
  denied(ctx, op, type, "*");
  return false;
}

}  // namespace strata::broker
