// Client: client quotas (see client.h) — DescribeClientQuotas / AlterClientQuotas, sent to the
// bootstrap broker.
#include "protocol/messages/alter_client_quotas.h"
#include "protocol/messages/describe_client_quotas.h"
#include "tools/client/client.h"

namespace strata::client {
namespace {

std::string entity_ctx(const std::vector<QuotaEntityPart>& entity) {
  std::string out = "quota entity '";
  for (size_t i = 0; i < entity.size(); ++i) {
    if (i) out += ',';
    out += entity[i].type;
    out += '=';
    out += entity[i].name ? *entity[i].name : "<default>";
  }
  return out + "'";
}

}  // namespace

Result<std::vector<QuotaEntry>> Client::describe_client_quotas(
    const std::vector<QuotaFilter>& filter, bool strict) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::DescribeClientQuotasRequest req;
  for (const auto& f : filter) {
    auto& c = req.components.emplace_back();
    c.entity_type = f.type;
    c.match_type = static_cast<int8_t>(f.match);
    c.match = f.match == QuotaMatch::exact ? f.name : std::nullopt;
  }
  req.strict = strict;
  auto reply =
      (*conn)->call<protocol::DescribeClientQuotasRequest, protocol::DescribeClientQuotasResponse>(
          req);
  if (!reply.ok()) return reply.status();
  const auto& msg = reply->msg;
  if (msg.error_code != protocol::ErrorCode::none) {
    return kafka_status(msg.error_code, "client quotas", msg.error_message.value_or(""));
  }
  std::vector<QuotaEntry> out;
  for (const auto& e : msg.entries.value_or(decltype(msg.entries)::value_type{})) {
    QuotaEntry q;
    for (const auto& p : e.entity) q.entity.push_back({p.entity_type, p.entity_name});
    for (const auto& v : e.values) q.values[v.key] = v.value;
    out.push_back(std::move(q));
  }
  return out;
}

Status Client::alter_client_quotas(const std::vector<QuotaEntityPart>& entity,
                                   const std::vector<QuotaOp>& ops, bool validate_only) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::AlterClientQuotasRequest req;
  auto& entry = req.entries.emplace_back();
  for (const auto& p : entity) {
    auto& e = entry.entity.emplace_back();
    e.entity_type = p.type;
    e.entity_name = p.name;
  }
  for (const auto& op : ops) {
    auto& o = entry.ops.emplace_back();
    o.key = op.key;
    o.value = op.value.value_or(0);
    o.remove = !op.value.has_value();
  }
  req.validate_only = validate_only;
  auto reply =
      (*conn)->call<protocol::AlterClientQuotasRequest, protocol::AlterClientQuotasResponse>(req);
  if (!reply.ok()) return reply.status();
  if (reply->msg.entries.empty()) return connection_status("empty AlterClientQuotas response");
  for (const auto& r : reply->msg.entries) {
    if (r.error_code != protocol::ErrorCode::none) {
      return kafka_status(r.error_code, entity_ctx(entity), r.error_message.value_or(""));
    }
  }
  return Status::Ok();
}

}  // namespace strata::client
