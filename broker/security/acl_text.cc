// Text forms of ACL bindings (see acl_text.h).
#include "broker/security/acl_text.h"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "protocol/base/percent_escape.h"

namespace strata::broker::security {
namespace {

template <typename E>
struct Named {
  E value;
  const char* name;
};

constexpr Named<ResourceType> kTypes[] = {{ResourceType::any, "ANY"},
                                          {ResourceType::topic, "TOPIC"},
                                          {ResourceType::group, "GROUP"},
                                          {ResourceType::cluster, "CLUSTER"},
                                          {ResourceType::transactional_id, "TRANSACTIONAL_ID"}};
constexpr Named<PatternType> kPatterns[] = {{PatternType::any, "ANY"},
                                            {PatternType::match, "MATCH"},
                                            {PatternType::literal, "LITERAL"},
                                            {PatternType::prefixed, "PREFIXED"}};
constexpr Named<AclOperation> kOperations[] = {
    {AclOperation::any, "ANY"},
    {AclOperation::all, "ALL"},
    {AclOperation::read, "READ"},
    {AclOperation::write, "WRITE"},
    {AclOperation::create, "CREATE"},
    {AclOperation::del, "DELETE"},
    {AclOperation::alter, "ALTER"},
    {AclOperation::describe, "DESCRIBE"},
    {AclOperation::cluster_action, "CLUSTER_ACTION"},
    {AclOperation::describe_configs, "DESCRIBE_CONFIGS"},
    {AclOperation::alter_configs, "ALTER_CONFIGS"},
    {AclOperation::idempotent_write, "IDEMPOTENT_WRITE"}};
constexpr Named<AclPermission> kPermissions[] = {
    {AclPermission::any, "ANY"}, {AclPermission::deny, "DENY"}, {AclPermission::allow, "ALLOW"}};

template <typename E, size_t N>
const char* lookup(const Named<E> (&table)[N], E v) {
  for (const auto& n : table) {
    if (n.value == v) return n.name;
  }
  return "UNKNOWN";
}

template <typename E, size_t N>
std::optional<E> parse(const Named<E> (&table)[N], std::string_view s) {
  std::string norm(s);
  std::transform(norm.begin(), norm.end(), norm.begin(), [](unsigned char c) {
    return c == '-' ? '_' : static_cast<char>(std::toupper(c));
  });
  for (const auto& n : table) {
    if (norm == n.name) return n.value;
  }
  return std::nullopt;
}

// Names, principals and hosts: printable ASCII but for '%' and '/', so that a line is also one
// flat etcd key segment (the tab separator is below 0x21).
bool keep(unsigned char c) { return printable_except(c, "/"); }

std::string escape(const std::string& s) { return percent_escape(s, keep); }

}  // namespace

const char* name_of(ResourceType t) { return lookup(kTypes, t); }
const char* name_of(PatternType p) { return lookup(kPatterns, p); }
const char* name_of(AclOperation o) { return lookup(kOperations, o); }
const char* name_of(AclPermission p) { return lookup(kPermissions, p); }

std::optional<ResourceType> parse_resource_type(std::string_view s) { return parse(kTypes, s); }
std::optional<PatternType> parse_pattern_type(std::string_view s) { return parse(kPatterns, s); }
std::optional<AclOperation> parse_operation(std::string_view s) { return parse(kOperations, s); }
std::optional<AclPermission> parse_permission(std::string_view s) { return parse(kPermissions, s); }

std::string encode_line(const AclBinding& b) {
  std::string out;
  out.append(name_of(b.resource_type)).append("\t");
  out.append(name_of(b.pattern)).append("\t");
  out.append(escape(b.resource_name)).append("\t");
  out.append(escape(b.principal)).append("\t");
  out.append(escape(b.host)).append("\t");
  out.append(name_of(b.operation)).append("\t");
  out.append(name_of(b.permission));
  return out;
}

std::optional<AclBinding> decode_line(std::string_view line) {
  std::vector<std::string_view> f;
  size_t pos = 0;
  for (;;) {
    const size_t tab = line.find('\t', pos);
    f.push_back(line.substr(pos, tab == std::string_view::npos ? line.npos : tab - pos));
    if (tab == std::string_view::npos) break;
    pos = tab + 1;
  }
  if (f.size() != 7) return std::nullopt;
  auto type = parse_resource_type(f[0]);
  auto pattern = parse_pattern_type(f[1]);
  auto name = percent_unescape(f[2]);
  auto principal = percent_unescape(f[3]);
  auto host = percent_unescape(f[4]);
  auto op = parse_operation(f[5]);
  auto perm = parse_permission(f[6]);
  if (!type || !pattern || !name || !principal || !host || !op || !perm) return std::nullopt;
  AclBinding b{*type, std::move(*name), *pattern, std::move(*principal), std::move(*host), *op,
               *perm};
  if (!valid_binding(b)) return std::nullopt;
  return b;
}

std::string describe(const AclBinding& b) {
  std::string out = b.principal;
  out.append(" from ").append(b.host).append(" ").append(name_of(b.permission)).append(" ");
  out.append(name_of(b.operation)).append(" on ").append(name_of(b.resource_type)).append(" ");
  out.append(name_of(b.pattern)).append(" ").append(b.resource_name);
  return out;
}

}  // namespace strata::broker::security
