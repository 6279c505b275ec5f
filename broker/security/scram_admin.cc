// Kafka's SCRAM administration rules (see scram_admin.h).
#include "broker/security/scram_admin.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <map>
#include <set>

#include "protocol/base/base64.h"

namespace strata::broker::security {

namespace {
using protocol::ErrorCode;
using protocol::sasl::kScramMaxIterations;
using protocol::sasl::kScramMinIterations;

ScramUserResult failure(const std::string& user, ErrorCode e, std::string message) {
  return ScramUserResult{user, e, std::move(message)};
}

// Kafka's validateScramUsernameAndMechanism.
std::optional<ScramUserResult> check_name_and_mechanism(const std::string& user, int8_t type) {
  if (user.empty()) {
    return failure(user, ErrorCode::unacceptable_credential, "Username must not be empty");
  }
  if (!scram_mechanism_of_type(type)) {
    return failure(user, ErrorCode::unsupported_sasl_mechanism, "Unknown SCRAM mechanism");
  }
  return std::nullopt;
}

constexpr const char* kTwice = "A user credential cannot be altered twice in the same request";

}  // namespace

std::optional<ScramMechanism> scram_mechanism_of_type(int8_t type) {
  if (type == kScramSha256Type) return ScramMechanism::sha256;
  if (type == kScramSha512Type) return ScramMechanism::sha512;
  return std::nullopt;
}

int8_t scram_type_of(ScramMechanism m) {
  return m == ScramMechanism::sha256 ? kScramSha256Type : kScramSha512Type;
}

bool scram_api_allowed(const Authorizer* authorizer, const std::string& principal,
                       const std::string& host, AclOperation op) {
  return authorizer == nullptr ||
         authorizer->authorize(principal, host, op, ResourceType::cluster, kClusterName);
}

std::vector<ScramUserResult> alter_refused(const std::vector<ScramDeletionIn>& deletions,
                                           const std::vector<ScramUpsertionIn>& upsertions,
                                           ErrorCode error, const std::string& message) {
  std::set<std::string> users;
  for (const auto& d : deletions) users.insert(d.name);
  for (const auto& u : upsertions) users.insert(u.name);
  std::vector<ScramUserResult> out;
  for (const auto& u : users) out.push_back(ScramUserResult{u, error, message});
  return out;
}

std::vector<ScramUserResult> alter_scram_credentials(
    ScramStore& store, const std::vector<ScramDeletionIn>& deletions,
    const std::vector<ScramUpsertionIn>& upsertions) {
  // As ScramControlManager: per user at most one change; a second mention fails the user.
  std::vector<std::string> order;  // users with a pending change, in request order
  std::map<std::string, ScramChange> pending;
  std::map<std::string, ScramUserResult> failed;
  std::vector<std::string> failed_order;
  auto fail = [&](ScramUserResult r) {
    pending.erase(r.user);
    if (!failed.count(r.user)) failed_order.push_back(r.user);
    failed[r.user] = std::move(r);
  };
  for (const auto& d : deletions) {
    if (failed.count(d.name)) continue;
    if (pending.count(d.name)) {
      fail(failure(d.name, ErrorCode::duplicate_resource, kTwice));
      continue;
    }
    if (auto bad = check_name_and_mechanism(d.name, d.mechanism)) {
      fail(std::move(*bad));
      continue;
    }
    const ScramMechanism m = *scram_mechanism_of_type(d.mechanism);
    if (!store.has(d.name, m)) {
      fail(failure(d.name, ErrorCode::resource_not_found,
                   "Attempt to delete a user credential that does not exist"));
      continue;
    }
    pending[d.name] = ScramChange{d.name, m, std::nullopt};
    order.push_back(d.name);
  }
  for (const auto& u : upsertions) {
    if (failed.count(u.name)) continue;
    if (pending.count(u.name)) {
      fail(failure(u.name, ErrorCode::duplicate_resource, kTwice));
      continue;
    }
    if (auto bad = check_name_and_mechanism(u.name, u.mechanism)) {
      fail(std::move(*bad));
      continue;
    }
    if (u.iterations < kScramMinIterations) {
      fail(failure(u.name, ErrorCode::unacceptable_credential, "Too few iterations"));
      continue;
    }
    if (u.iterations > kScramMaxIterations) {
      fail(failure(u.name, ErrorCode::unacceptable_credential, "Too many iterations"));
      continue;
    }
    const ScramMechanism m = *scram_mechanism_of_type(u.mechanism);
    pending[u.name] = ScramChange{
        u.name, m,
        protocol::sasl::scram_credential_from_salted(m, u.salted_password, u.salt, u.iterations)};
    order.push_back(u.name);
  }
  std::vector<ScramChange> changes;
  std::vector<std::string> changed;
  for (const auto& user : order) {
    auto it = pending.find(user);
    if (it == pending.end()) continue;  // failed later in the request
    changes.push_back(it->second);
    changed.push_back(user);
  }
  std::vector<ScramUserResult> out;
  Status written = store.alter(changes);
  for (const auto& user : changed) {
    if (written.ok()) {
      out.push_back(ScramUserResult{user, ErrorCode::none, std::nullopt});
      continue;
    }
    const bool etcd = written.code() == Errc::unavailable;  // etcd did not answer: retry
    out.push_back(failure(user,
                          etcd ? ErrorCode::request_timed_out : ErrorCode::kafka_storage_error,
                          "Storing the credentials failed: " + written.message()));
  }
  if (!written.ok()) spdlog::error("storing SCRAM credentials failed: {}", written.to_string());
  for (const auto& user : failed_order) out.push_back(failed[user]);
  return out;
}

std::vector<ScramDescribeResult> describe_scram_credentials(
    const ScramStore& store, const std::optional<std::vector<std::string>>& users) {
  const ScramCredentials all = store.all();
  std::vector<std::string> names;
  std::set<std::string> twice;
  if (!users || users->empty()) {
    for (const auto& kv : all) names.push_back(kv.first);
  } else {
    std::set<std::string> seen;
    for (const auto& u : *users) {
      if (!seen.insert(u).second) {
        twice.insert(u);
      } else {
        names.push_back(u);
      }
    }
  }
  std::vector<ScramDescribeResult> out;
  for (const auto& name : names) {
    ScramDescribeResult r;
    r.user.user = name;
    if (twice.count(name)) {
      r.user.error = ErrorCode::duplicate_resource;
      r.user.message =
          "Cannot describe SCRAM credentials for the same user twice in a single request: " + name;
    } else if (auto it = all.find(name); it == all.end() || it->second.empty()) {
      r.user.error = ErrorCode::resource_not_found;
      r.user.message = "Attempt to describe a user credential that does not exist: " + name;
    } else {
      for (const auto& [m, c] : it->second)
        r.credentials.emplace_back(scram_type_of(m), c.iterations);
    }
    out.push_back(std::move(r));
  }
  return out;
}

// ---------------------------------------------------------------- bootstrap users

namespace {

// Splits `s` at `sep` outside double quotes; quotes are kept.
std::vector<std::string> split_unquoted(std::string_view s, char sep) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : s) {
    if (c == '"') quoted = !quoted;
    if (c == sep && !quoted) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\n");
  return std::string(s.substr(b, e - b + 1));
}

Status bad(std::string why) {
  return Status(Errc::invalid_argument, "sasl.scram.bootstrap.users: " + why);
}

}  // namespace

Result<std::vector<BootstrapUser>> parse_bootstrap_users(std::string_view value) {
  std::vector<BootstrapUser> out;
  for (const auto& raw : split_unquoted(value, ';')) {
    const std::string entry = trim(raw);
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    if (eq == std::string::npos) return bad("an entry has no '=' after its mechanism");
    auto m = protocol::sasl::scram_mechanism(entry.substr(0, eq));
    if (!m) return bad("unknown mechanism " + entry.substr(0, eq) + " (SCRAM-SHA-256 or -512)");
    std::string body = entry.substr(eq + 1);
    if (body.size() < 2 || body.front() != '[' || body.back() != ']') {
      return bad("expected MECHANISM=[name=...,password=...]");
    }
    body = body.substr(1, body.size() - 2);
    BootstrapUser u;
    u.mechanism = *m;
    std::optional<std::string> salted_b64;
    for (const auto& part : split_unquoted(body, ',')) {
      const std::string item = trim(part);
      const size_t e = item.find('=');
      if (e == std::string::npos) return bad("a component has no '='");
      const std::string key = item.substr(0, e);
      std::string v = item.substr(e + 1);
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
      if (key == "name") {
        u.name = v;
      } else if (key == "password") {
        u.password = v;
      } else if (key == "saltedpassword") {
        salted_b64 = v;
      } else if (key == "iterations") {
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), u.iterations);
        if (ec != std::errc() || p != v.data() + v.size()) return bad("iterations is not a number");
      } else if (key == "salt") {
        auto s = base64_decode(v);
        if (!s.ok() || s->empty()) return bad("salt is not base64");
        u.salt = std::move(*s);
      } else {
        return bad("unknown component " + key);
      }
    }
    if (u.name.empty()) return bad("an entry has no name");
    if (salted_b64) {
      auto s = base64_decode(*salted_b64);
      if (!s.ok() || s->empty()) return bad("saltedpassword is not base64");
      if (u.salt.empty()) return bad("saltedpassword needs a salt");
      u.salted_password = std::move(*s);
    }
    if (u.password.has_value() == u.salted_password.has_value()) {
      return bad("user " + u.name + " needs one of password or saltedpassword");
    }
    if (u.iterations < kScramMinIterations || u.iterations > kScramMaxIterations) {
      return bad("iterations of " + u.name + " must be in [4096, 16384]");
    }
    out.push_back(std::move(u));
  }
  return out;
}

Status apply_bootstrap_users(ScramStore& store, const std::vector<BootstrapUser>& users) {
  for (const auto& u : users) {
    if (store.has(u.name, u.mechanism)) continue;
    std::string salt = u.salt;
    if (salt.empty()) {
      auto fresh = protocol::sasl::scram_random_salt();
      if (!fresh.ok()) return fresh.status();
      salt = std::move(*fresh);
    }
    std::string salted;
    if (u.salted_password) {
      salted = *u.salted_password;
    } else {
      auto s = protocol::sasl::scram_salted_password(u.mechanism, *u.password, salt, u.iterations);
      if (!s.ok()) return s.status();
      salted = std::move(*s);
    }
    auto created = store.put_if_absent(
        u.name, u.mechanism,
        protocol::sasl::scram_credential_from_salted(u.mechanism, salted, salt, u.iterations));
    if (!created.ok()) return created.status();
    if (*created) {
      spdlog::info("created bootstrap SCRAM user {} ({})", u.name,
                   protocol::sasl::scram_mechanism_name(u.mechanism));
    }
  }
  return Status::Ok();
}

}  // namespace strata::broker::security
