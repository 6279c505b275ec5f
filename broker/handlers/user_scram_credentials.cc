// DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), v0: the SCRAM credential
// store's admin APIs (broker/security/scram_admin.h has Kafka's rules). Authorization as Kafka's
// KafkaApis / ControllerApis: DESCRIBE on the cluster for describe (else the top-level error
// CLUSTER_AUTHORIZATION_FAILED), ALTER on the cluster for alter (else every named user gets it).
// In cluster mode an alteration is one etcd transaction, answered once this broker's copy has it,
// like the other admin APIs that write etcd.
#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/scram_admin.h"
#include "broker/security/security_services.h"
#include "broker/services.h"
#include "protocol/messages/alter_user_scram_credentials.h"
#include "protocol/messages/describe_user_scram_credentials.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;

constexpr const char* kNotAuthorized = "Cluster authorization failed.";

std::string bytes_to_string(std::span<const uint8_t> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}
}  // namespace

void describe_user_scram_credentials(RequestContext& ctx, protocol::Reader& body) {
  protocol::DescribeUserScramCredentialsRequest req;
  req.decode(body, ctx.version);
  protocol::DescribeUserScramCredentialsResponse resp;
  resp.error_message = std::nullopt;
  if (!security::scram_api_allowed(ctx.svc.authorizer, ctx.principal(), ctx.client_host(),
                                   security::AclOperation::describe) ||
      !ctx.svc.scram) {
    // Kafka's getErrorResponse: the error at the top and once per user named.
    resp.error_code =
        ctx.svc.scram ? ErrorCode::cluster_authorization_failed : ErrorCode::unknown_server_error;
    resp.error_message = ctx.svc.scram ? kNotAuthorized : "no credential store";
    for (size_t i = 0; req.users && i < req.users->size(); ++i) {
      auto& r = resp.results.emplace_back();
      r.error_code = resp.error_code;
      r.error_message = resp.error_message;
    }
    ctx.svc.metrics.request_error(ctx.api_key, resp.error_code);
    ctx.respond(resp);
    return;
  }
  std::optional<std::vector<std::string>> users;
  if (req.users) {
    users.emplace();
    for (const auto& u : *req.users) users->push_back(u.name);
  }
  for (auto& d : security::describe_scram_credentials(*ctx.svc.scram, users)) {
    auto& r = resp.results.emplace_back();
    r.user = d.user.user;
    r.error_code = d.user.error;
    r.error_message = d.user.message;
    for (const auto& [mechanism, iterations] : d.credentials) {
      auto& info = r.credential_infos.emplace_back();
      info.mechanism = mechanism;
      info.iterations = iterations;
    }
  }
  ctx.respond(resp);
}

void alter_user_scram_credentials(RequestContext& ctx, protocol::Reader& body) {
  protocol::AlterUserScramCredentialsRequest req;
  req.decode(body, ctx.version);
  protocol::AlterUserScramCredentialsResponse resp;
  std::vector<security::ScramDeletionIn> deletions;
  for (const auto& d : req.deletions) deletions.push_back({d.name, d.mechanism});
  std::vector<security::ScramUpsertionIn> upsertions;
  for (const auto& u : req.upsertions) {
    upsertions.push_back({u.name, u.mechanism, u.iterations, bytes_to_string(u.salt),
                          bytes_to_string(u.salted_password)});
  }
  std::vector<security::ScramUserResult> results;
  if (!ctx.svc.scram) {
    results = security::alter_refused(deletions, upsertions, ErrorCode::unknown_server_error,
                                      "no credential store");
  } else if (!security::scram_api_allowed(ctx.svc.authorizer, ctx.principal(), ctx.client_host(),
                                          security::AclOperation::alter)) {
    results = security::alter_refused(deletions, upsertions,
                                      ErrorCode::cluster_authorization_failed, kNotAuthorized);
  } else {
    results = security::alter_scram_credentials(*ctx.svc.scram, deletions, upsertions);
  }
  for (auto& r : results) {
    if (r.error == ErrorCode::none) {
      spdlog::info("SCRAM credentials of user {} altered by {}", r.user, ctx.responder.peer());
    } else {
      ctx.svc.metrics.request_error(ctx.api_key, r.error);
    }
    auto& out = resp.results.emplace_back();
    out.user = std::move(r.user);
    out.error_code = r.error;
    out.error_message = std::move(r.message);
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
