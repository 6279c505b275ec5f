// QuotaStore: the durable client-quota configuration (what AlterClientQuotas sets and
// DescribeClientQuotas reads), with Kafka's validation and filter semantics.
//
// An entity is a set of (entity type, name) parts, at most one per type; a null name is the
// type's default entity. Kafka's entities are user, client-id, user+client-id and ip; Strata has
// no authentication yet, so only `client-id` entities are accepted (user and user+client-id come
// with SASL: the key already holds several parts, sorted by type). Quota keys:
//   producer_byte_rate  (integral, bytes/s of Produce requests)
//   consumer_byte_rate  (integral, bytes/s of Fetch responses)
//   request_percentage  (percent of one request-handler thread's time per second)
// Persisted in `<first log dir>/client-quotas` (written atomically on every change), one line per
// entity and key: `<entity>\t<key>\t<value>`, the entity `type=name` parts joined by ',' with
// names percent-escaped, a default part written as the bare type.
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

std::string entity_to_string(const QuotaEntity& e);  // "client-id=a", "client-id=<default>"

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

  // The value of `key` that applies to a client: its own client-id entity, else the default
  // client-id entity (Kafka's order for unauthenticated clients; user levels come with SASL).
  std::optional<double> resolve(const std::string& client_id, std::string_view key) const;
  // Whether any entity sets `key` (no throttling work at all while none does).
  bool any(std::string_view key) const;

  const std::string& path() const { return path_; }

 private:
  QuotaStore(storage::Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  Status persist(const std::map<QuotaEntity, QuotaValues>& all) const;

  storage::Env* env_;
  const std::string path_;
  std::mutex write_mu_;
  mutable std::shared_mutex mu_;
  std::map<QuotaEntity, QuotaValues> quotas_;
};

}  // namespace strata::broker::quota
