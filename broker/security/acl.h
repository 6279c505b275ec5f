// Kafka's ACL model and its authorization decision, as the Java broker's AclAuthorizer makes it:
//  - an ACL binds (resource type, name, LITERAL or PREFIXED pattern) to (principal, host,
//    operation, ALLOW or DENY); LITERAL "*" matches every name of its type, principal "User:*" and
//    host "*" match everyone;
//  - DENY wins: a matching DENY for the operation itself (or ALL) refuses;
//  - ALLOW for the operation or ALL permits; DESCRIBE is also permitted by READ, WRITE, DELETE
//    or ALTER, and DESCRIBE_CONFIGS by ALTER_CONFIGS;
//  - super users are always permitted; a resource no ACL matches at all is permitted only when
//    allow.everyone.if.no.acl.found.
// Enum values are Kafka's wire codes. AclStore holds the bindings, indexed by resource (literal
// names in a hash map, prefixes in a sorted map walked by the name's prefixes). Thread-safe:
// readers share a lock, changes take it exclusively.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata::broker::security {

enum class ResourceType : int8_t {
  any = 1,
  topic = 2,
  group = 3,
  cluster = 4,
  transactional_id = 5
};
enum class PatternType : int8_t { any = 1, match = 2, literal = 3, prefixed = 4 };
enum class AclOperation : int8_t {
  any = 1,
  all = 2,
  read = 3,
  write = 4,
  create = 5,
  del = 6,
  alter = 7,
  describe = 8,
  cluster_action = 9,
  describe_configs = 10,
  alter_configs = 11,
  idempotent_write = 12
};
enum class AclPermission : int8_t { any = 1, deny = 2, allow = 3 };

inline constexpr const char* kWildcard = "*";
inline constexpr const char* kAnyUser = "User:*";
inline constexpr const char* kClusterName = "kafka-cluster";

struct AclBinding {
  ResourceType resource_type = ResourceType::topic;
  std::string resource_name;
  PatternType pattern = PatternType::literal;
  std::string principal;  // "User:alice"
  std::string host = kWildcard;
  AclOperation operation = AclOperation::read;
  AclPermission permission = AclPermission::allow;

  auto operator<=>(const AclBinding&) const = default;
};

// A Describe/DeleteAcls filter: `any` fields match everything; PatternType::match matches the
// LITERAL name, the LITERAL wildcard and every PREFIXED pattern the name starts with.
struct AclFilter {
  ResourceType resource_type = ResourceType::any;
  std::optional<std::string> resource_name;
  PatternType pattern = PatternType::any;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  AclOperation operation = AclOperation::any;
  AclPermission permission = AclPermission::any;

  bool matches(const AclBinding& b) const;
};

// A binding the store accepts: concrete enums (no any/match), a non-empty name and principal,
// a principal of the form "Type:name".
bool valid_binding(const AclBinding& b);

struct AuthorizerConfig {
  std::set<std::string> super_users;  // principals
  bool allow_everyone_if_no_acl_found = false;
};

class AclStore {
 public:
  explicit AclStore(AuthorizerConfig config = {}) : config_(std::move(config)) {}

  // Adds bindings (already present ones are kept once); returns how many were new.
  size_t add(const std::vector<AclBinding>& bindings);
  // Removes and returns the bindings matching `filter`.
  std::vector<AclBinding> remove(const AclFilter& filter);
  std::vector<AclBinding> list(const AclFilter& filter) const;
  size_t size() const;

  bool authorize(const std::string& principal, const std::string& host, AclOperation op,
                 ResourceType type, const std::string& name) const;
  // Kafka's authorizeByResourceType (KIP-679): whether `op` is allowed on at least one resource
  // of `type` — a super user, allow.everyone with no ACL, an ALLOW (op or ALL; no implied
  // operations) on some pattern that no DENY literal of the same name or DENY prefix of it covers.
  bool authorize_any(const std::string& principal, const std::string& host, AclOperation op,
                     ResourceType type) const;
  // Replaces every binding at once (a reload: readers never see a partial set).
  void reset(const std::vector<AclBinding>& bindings);

 private:
  using Bindings = std::vector<AclBinding>;
  struct PerType {
    std::unordered_map<std::string, Bindings> literal;      // includes "*"
    std::map<std::string, Bindings, std::less<>> prefixed;  // found by string_view
  };
  // Calls fn on every binding whose resource matches (type, name).
  template <typename Fn>
  void for_matching(ResourceType type, const std::string& name, Fn&& fn) const;

  AuthorizerConfig config_;
  mutable std::shared_mutex mu_;
  std::map<ResourceType, PerType> by_type_;
  size_t size_ = 0;
};

}  // namespace strata::broker::security
