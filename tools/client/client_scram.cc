// Client: SCRAM credentials (see client.h) — DescribeUserScramCredentials (50) and
// AlterUserScramCredentials (51), sent to the bootstrap broker (any broker stores them).
#include "protocol/messages/alter_user_scram_credentials.h"
#include "protocol/messages/describe_user_scram_credentials.h"
#include "tools/client/client.h"

namespace strata::client {
namespace {

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

Result<std::vector<ScramUser>> Client::describe_scram_users(const std::vector<std::string>& users) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::DescribeUserScramCredentialsRequest req;
  if (!users.empty()) {
    req.users.emplace();
    for (const auto& u : users) req.users->emplace_back().name = u;
  }
  auto reply = (*conn)
                   ->call<protocol::DescribeUserScramCredentialsRequest,
                          protocol::DescribeUserScramCredentialsResponse>(req);
  if (!reply.ok()) return reply.status();
  const auto& msg = reply->msg;
  if (msg.error_code != protocol::ErrorCode::none) {
    return kafka_status(msg.error_code, "SCRAM users", msg.error_message.value_or(""));
  }
  std::vector<ScramUser> out;
  for (const auto& r : msg.results) {
    if (r.error_code != protocol::ErrorCode::none) {
      return kafka_status(r.error_code, "user '" + r.user + "'", r.error_message.value_or(""));
    }
    ScramUser u;
    u.user = r.user;
    for (const auto& c : r.credential_infos) u.credentials.push_back({c.mechanism, c.iterations});
    out.push_back(std::move(u));
  }
  return out;
}

Result<std::vector<ScramAlterResult>> Client::alter_scram_credentials(
    const std::vector<ScramDelete>& deletions, const std::vector<ScramUpsert>& upsertions) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  protocol::AlterUserScramCredentialsRequest req;
  for (const auto& d : deletions) {
    auto& o = req.deletions.emplace_back();
    o.name = d.user;
    o.mechanism = d.mechanism;
  }
  for (const auto& u : upsertions) {
    auto& o = req.upsertions.emplace_back();
    o.name = u.user;
    o.mechanism = u.mechanism;
    o.iterations = u.iterations;
    o.salt = bytes_of(u.salt);  // `upsertions` outlives the call
    o.salted_password = bytes_of(u.salted_password);
  }
  auto reply = (*conn)
                   ->call<protocol::AlterUserScramCredentialsRequest,
                          protocol::AlterUserScramCredentialsResponse>(req);
  if (!reply.ok()) return reply.status();
  std::vector<ScramAlterResult> out;
  for (const auto& r : reply->msg.results) {
    ScramAlterResult a;
    a.user = r.user;
    a.error = protocol::error_value(r.error_code);
    a.message = r.error_message.value_or("");
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace strata::client
