// Kafka's rules for administering SCRAM credentials over a ScramStore, apart from the wire so they
// are tested directly (the handlers in broker/handlers/user_scram_credentials.cc only decode,
// authorize and encode):
//  - describe (DescribeUserScramCredentials, Kafka's ScramImage.describe): null or empty users =
//    every user; a user named twice → DUPLICATE_RESOURCE, a user without credentials →
//    RESOURCE_NOT_FOUND; otherwise its mechanisms and iteration counts (never salts or keys).
//  - alter (AlterUserScramCredentials, Kafka's ScramControlManager.alterCredentials): a user named
//    twice in one request (deletions and upsertions together) → DUPLICATE_RESOURCE for that user
//    and none of its changes applied; an empty name → UNACCEPTABLE_CREDENTIAL; a mechanism other
//    than 1 (SCRAM-SHA-256) / 2 (SCRAM-SHA-512) → UNSUPPORTED_SASL_MECHANISM; iterations outside
//    [4096, 16384] → UNACCEPTABLE_CREDENTIAL; deleting a credential that does not exist →
//    RESOURCE_NOT_FOUND. The valid changes are applied together (one durable write); when that
//    write fails each of their users gets the failure (KAFKA_STORAGE_ERROR on a single node,
//    REQUEST_TIMED_OUT when etcd did not answer). An upsertion's salted password becomes the
//    stored and server keys here; it is never kept.
//  - bootstrap (`sasl.scram.bootstrap.users`): users created at start unless they already have a
//    credential of that mechanism.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/security/scram_store.h"
#include "protocol/wire/errors.h"

namespace strata::broker::security {

// Kafka's ScramMechanism type bytes.
inline constexpr int8_t kScramSha256Type = 1;
inline constexpr int8_t kScramSha512Type = 2;
std::optional<ScramMechanism> scram_mechanism_of_type(int8_t type);
int8_t scram_type_of(ScramMechanism m);

struct ScramUserResult {
  std::string user;
  protocol::ErrorCode error = protocol::ErrorCode::none;
  std::optional<std::string> message;  // nullopt when there is no error
};

struct ScramDeletionIn {
  std::string name;
  int8_t mechanism = 0;
};
struct ScramUpsertionIn {
  std::string name;
  int8_t mechanism = 0;
  int32_t iterations = 0;
  std::string salt;
  std::string salted_password;
};

// Kafka's authorization of the two APIs: DESCRIBE (describe) or ALTER (alter) on the CLUSTER
// resource `kafka-cluster`; everything is allowed while no authorizer is configured (null).
bool scram_api_allowed(const Authorizer* authorizer, const std::string& principal,
                       const std::string& host, AclOperation op);
// Kafka's answer to a refused AlterUserScramCredentials (its getErrorResponse): every user named,
// once, sorted by name, each with `error` and `message`.
std::vector<ScramUserResult> alter_refused(const std::vector<ScramDeletionIn>& deletions,
                                           const std::vector<ScramUpsertionIn>& upsertions,
                                           protocol::ErrorCode error, const std::string& message);

// One result per user named, successes first (in request order), then failures.
std::vector<ScramUserResult> alter_scram_credentials(
    ScramStore& store, const std::vector<ScramDeletionIn>& deletions,
    const std::vector<ScramUpsertionIn>& upsertions);

struct ScramDescribeResult {
  ScramUserResult user;
  std::vector<std::pair<int8_t, int32_t>> credentials;  // (mechanism type, iterations)
};
// Users in request order (each once), or every user sorted by name.
std::vector<ScramDescribeResult> describe_scram_credentials(
    const ScramStore& store, const std::optional<std::vector<std::string>>& users);

// `sasl.scram.bootstrap.users`: entries separated by ';', each in the syntax of Kafka's
// `kafka-storage format --add-scram`: `MECHANISM=[name=USER,password=PASSWORD]`, optionally with
// `iterations=N` (default 4096, as Kafka's) and `salt=BASE64`, or `saltedpassword=BASE64` (with a
// salt) instead of the password. A value holding ',', ';' or ']' is written in double quotes.
struct BootstrapUser {
  std::string name;
  ScramMechanism mechanism = ScramMechanism::sha512;
  std::optional<std::string> password;
  std::optional<std::string> salted_password;  // raw bytes
  int32_t iterations = protocol::sasl::kScramMinIterations;
  std::string salt;  // raw bytes; empty = random
};
Result<std::vector<BootstrapUser>> parse_bootstrap_users(std::string_view value);
// Creates each user that has no credential of its mechanism yet (a restart, or another broker of
// the cluster, may have made it — or an operator changed it since: never overwritten).
Status apply_bootstrap_users(ScramStore& store, const std::vector<BootstrapUser>& users);

}  // namespace strata::broker::security
