// QuotaStore: the durable client-quota configuration (what AlterClientQuotas sets and
// DescribeClientQuotas reads), with Kafka's validation and filter semantics, and the resolution of
// which entity's value applies to a client (KIP-55, Kafka's ClientQuotaManager).
//
// An entity is a set of (entity type, name) parts, at most one per type, sorted by type; a null
// name is the type's default entity. Accepted: `user`, `client-id` and `user`+`client-id`, each
// part named or default (Kafka's user is the principal's name: "alice" for User:alice, ANONYMOUS
// unauthenticated). Kafka's `ip` entities (connection_creation_rate) are refused: no connection
// rate quota exists here. Quota keys:
//   producer_byte_rate  (integral, bytes/s of Produce requests)
//   consumer_byte_rate  (integral, bytes/s of Fetch responses)
//   request_percentage  (percent of one request-handler thread's time per second)
// Resolution, per key, most specific first (Kafka's order):
//   /users/<user>/clients/<client-id>, /users/<user>/clients/<default>, /users/<user>,
//   /users/<default>/clients/<client-id>, /users/<default>/clients/<default>, /users/<default>,
//   /clients/<client-id>, /clients/<default>.
// Persisted in `<first log dir>/client-quotas` (written atomically on every change), one line per
// entity and key: `<entity>\t<key>\t<value>`, the entity `type=name` parts sorted by type and
// joined by ',' (`client-id=x,user=alice`) with names percent-escaped, a default part written as
// the bare type. Files written before user entities existed hold client-id lines only and load
// unchanged. Each broker has its own file, in a cluster too (quotas are not shared through etcd).
//
// Thread-safe: readers take a shared lock; alter() serialises writers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::broker::quota {

inline constexpr std::string_view kClientIdType = "client-id";
inline constexpr std::string_view kUserType = "user";
inline constexpr std::string_view kIpType = "ip";

inline constexpr std::string_view kProducerByteRate = "producer_byte_rate";
inline constexpr std::string_view kConsumerByteRate = "consumer_byte_rate";
inline constexpr std::string_view kRequestPercentage = "request_percentage";

// (type, name); name nullopt = the default entity of that type.
using EntityPart = std::pair<std::string, std::optional<std::string>>;
// Sorted by type, one part per type.
using QuotaEntity = std::vector<EntityPart>;
using QuotaValues = std::map<std::string, double>;

// One entity's changes: key -> value to set, or nullopt to remove.
struct QuotaAlteration {
  QuotaEntity entity;  // as sent (validate() sorts and checks it)
  std::vector<std::pair<std::string, std::optional<double>>> ops;
};

// DescribeClientQuotas filter component (Kafka's match types 0, 1, 2).
enum class MatchType : int8_t { exact = 0, default_ = 1, any = 2 };
struct FilterComponent {
  std::string entity_type;
  MatchType match_type = MatchType::exact;
  std::optional<std::string> match;  // the name for `exact`
};

// "client-id=a", "client-id=<default>"; a user part first: "user=alice,client-id=<default>".
std::string entity_to_string(const QuotaEntity& e);

// The eight levels of Kafka's resolution order, most specific first.
enum class QuotaLevel : uint8_t {
  user_client = 0,              // /users/<user>/clients/<client-id>
  user_default_client,          // /users/<user>/clients/<default>
  user,                         // /users/<user>
  default_user_client,          // /users/<default>/clients/<client-id>
  default_user_default_client,  // /users/<default>/clients/<default>
  default_user,                 // /users/<default>
  client,                       // /clients/<client-id>
  default_client,               // /clients/<default>
};
inline constexpr int kQuotaLevels = 8;
// The entity of `level` for this user and client id.
QuotaEntity level_entity(QuotaLevel level, std::string_view user, std::string_view client_id);

// The value that applies and the level it comes from.
struct ResolvedQuota {
  double value = 0;
  QuotaLevel level = QuotaLevel::default_client;
};

class QuotaStore {
 public:
  // Reads `<dir>/client-quotas` (absent = no quotas).
  static Result<std::unique_ptr<QuotaStore>> open(storage::Env* env, const std::string& dir);

  // Checks one alteration as Kafka does (INVALID_REQUEST cases = Errc::invalid_argument):
  // an empty entity, a duplicate or unsupported entity type, an empty name, an unknown or
  // duplicate quota key, a negative / zero / non-finite value, a fractional byte rate.
  static Status validate(const QuotaAlteration& a);
  // Validates every alteration; applies and persists those that pass unless validate_only.
  // Returns one Status per alteration, in order. Two alterations of one entity: the later fails.
  std::vector<Status> alter(const std::vector<QuotaAlteration>& alterations, bool validate_only);

  // Entities matching the filter (Kafka's rules: an empty non-strict filter matches all, an empty
  // strict one none; every component must match a part of the entity; strict excludes entities
  // with parts of unfiltered types). Bad filters → Errc::invalid_argument (INVALID_REQUEST) or
  // Errc::unsupported (an unknown entity type: UNSUPPORTED_VERSION, as Kafka).
  Result<std::vector<std::pair<QuotaEntity, QuotaValues>>> describe(
      const std::vector<FilterComponent>& filter, bool strict) const;

  // The value of `key` that applies to a client of `user` (the principal's name) with
  // `client_id`: the first level of Kafka's order (above) whose entity sets `key`.
  std::optional<ResolvedQuota> resolve(std::string_view user, std::string_view client_id,
                                       std::string_view key) const;
  // Whether any entity sets `key` (no throttling work at all while none does).
  bool any(std::string_view key) const;

  const std::string& path() const { return path_; }

 private:
  QuotaStore(storage::Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status persist(const std::map<QuotaEntity, QuotaValues>& all) const;
  void index_levels();  // mu_ held exclusively: levels_ from quotas_

  storage::Env* env_;
  const std::string path_;
  std::mutex write_mu_;
  mutable std::shared_mutex mu_;
  std::map<QuotaEntity, QuotaValues> quotas_;
  // Bit per QuotaLevel: some entity of that shape exists (resolve() skips the others, so a
  // client-id-only configuration costs what it did before user entities).
  uint32_t levels_ = 0;
};

}  // namespace strata::broker::quota
