// `strata acl add|remove|list`: ACL administration with kafka-acls' semantics (CreateAcls /
// DeleteAcls / DescribeAcls). add: every (allow principal x allow host x operation) and (deny
// principal x deny host x operation) on every resource named, hosts default '*', operations
// default All, pattern literal or prefixed; remove: the same bindings, or with no principal every
// ACL of the resources named; list: the ACLs of the resources named (all with none), optionally
// of one principal, pattern type any by default (match = the ACLs that apply to the name).
#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <tuple>

#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

struct AclOpts {
  std::vector<std::string> allow_principals, deny_principals, principals;
  std::vector<std::string> allow_hosts, deny_hosts, hosts;
  std::vector<std::string> operations;
  std::vector<std::string> topics, groups, transactional_ids;
  bool cluster = false;
  std::string pattern;  // "" = the subcommand's default
};

struct Named {
  int8_t code;
  const char* name;
};
constexpr Named kTypes[] = {{2, "TOPIC"}, {3, "GROUP"}, {4, "CLUSTER"}, {5, "TRANSACTIONAL_ID"}};
constexpr Named kPatterns[] = {{1, "ANY"}, {2, "MATCH"}, {3, "LITERAL"}, {4, "PREFIXED"}};
constexpr Named kOps[] = {{2, "ALL"},
                          {3, "READ"},
                          {4, "WRITE"},
                          {5, "CREATE"},
                          {6, "DELETE"},
                          {7, "ALTER"},
                          {8, "DESCRIBE"},
                          {9, "CLUSTER_ACTION"},
                          {10, "DESCRIBE_CONFIGS"},
                          {11, "ALTER_CONFIGS"},
                          {12, "IDEMPOTENT_WRITE"}};
constexpr Named kPerms[] = {{2, "DENY"}, {3, "ALLOW"}};

template <size_t N>
const char* name_of(const Named (&t)[N], int8_t code) {
  for (const auto& n : t) {
    if (n.code == code) return n.name;
  }
  return "UNKNOWN";
}

// "describe-configs", "DescribeConfigs", "DESCRIBE_CONFIGS" alike: letters only, upper case.
std::string squash(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c)) out += static_cast<char>(std::toupper(c));
  }
  return out;
}

template <size_t N>
std::optional<int8_t> parse(const Named (&t)[N], const std::string& s) {
  for (const auto& n : t) {
    if (squash(n.name) == squash(s)) return n.code;
  }
  return std::nullopt;
}

// The operations kafka-acls accepts per resource type (AclCommand.ResourceTypeToValidOperations).
bool valid_for(int8_t type, int8_t op) {
  static const std::map<int8_t, std::vector<int8_t>> kValid = {{2, {3, 4, 5, 8, 6, 7, 10, 11, 2}},
                                                               {3, {3, 8, 6, 2}},
                                                               {4, {5, 9, 10, 11, 12, 7, 8, 2}},
                                                               {5, {8, 4, 2}}};
  const auto& ops = kValid.at(type);
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

struct Resource {
  int8_t type;
  std::string name;
};

std::vector<Resource> resources_of(const AclOpts& o) {
  std::vector<Resource> out;
  for (const auto& t : o.topics) out.push_back({2, t});
  for (const auto& g : o.groups) out.push_back({3, g});
  if (o.cluster) out.push_back({4, "kafka-cluster"});
  for (const auto& t : o.transactional_ids) out.push_back({5, t});
  return out;
}

json binding_json(const client::AclBinding& b) {
  return {{"principal", b.principal},
          {"host", b.host},
          {"permission", name_of(kPerms, b.permission)},
          {"operation", name_of(kOps, b.operation)},
          {"resource_type", name_of(kTypes, b.resource_type)},
          {"resource_name", b.resource_name},
          {"pattern_type", name_of(kPatterns, b.pattern_type)}};
}

void print_bindings(Cli& cli, const std::vector<client::AclBinding>& bindings,
                    const std::string& headline) {
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& b : bindings) arr.push_back(binding_json(b));
    print_json(arr);
    return;
  }
  if (!headline.empty()) std::cout << headline << "\n";
  TextTable tt({"PRINCIPAL", "HOST", "PERMISSION", "OPERATION", "RESOURCE", "NAME", "PATTERN"});
  for (const auto& b : bindings) {
    tt.add({b.principal, b.host, name_of(kPerms, b.permission), name_of(kOps, b.operation),
            name_of(kTypes, b.resource_type), b.resource_name, name_of(kPatterns, b.pattern_type)});
  }
  tt.print();
}

// The bindings add/remove name: principals x hosts x operations on every resource.
Result<std::vector<client::AclBinding>> bindings_of(const AclOpts& o, int8_t pattern) {
  std::vector<int8_t> ops;
  for (const auto& s : o.operations.empty() ? std::vector<std::string>{"All"} : o.operations) {
    auto op = parse(kOps, s);
    if (!op) return Status(Errc::invalid_argument, "unknown operation '" + s + "'");
    ops.push_back(*op);
  }
  auto hosts = [&](const std::vector<std::string>& own) {
    std::vector<std::string> h = own;
    h.insert(h.end(), o.hosts.begin(), o.hosts.end());
    if (h.empty()) h.push_back("*");
    return h;
  };
  std::vector<client::AclBinding> out;
  for (const auto& r : resources_of(o)) {
    for (int8_t op : ops) {
      if (!valid_for(r.type, op)) {
        return Status(Errc::invalid_argument, std::string("operation ") + name_of(kOps, op) +
                                                  " is not valid on a " + name_of(kTypes, r.type) +
                                                  " resource");
      }
      for (const auto& [principals, own_hosts, perm] :
           {std::tuple{&o.allow_principals, &o.allow_hosts, int8_t{3}},
            std::tuple{&o.deny_principals, &o.deny_hosts, int8_t{2}}}) {
        for (const auto& p : *principals) {
          for (const auto& h : hosts(*own_hosts)) {
            out.push_back({r.type, r.name, pattern, p, h, op, perm});
          }
        }
      }
    }
  }
  return out;
}

Result<int8_t> pattern_of(const AclOpts& o, const char* def, bool filter) {
  const std::string s = o.pattern.empty() ? def : o.pattern;
  auto p = parse(kPatterns, s);
  if (!p || (!filter && *p != 3 && *p != 4)) {
    return Status(Errc::invalid_argument, "--resource-pattern-type must be literal or prefixed" +
                                              std::string(filter ? ", match or any" : "") +
                                              ", not '" + s + "'");
  }
  return *p;
}

int do_add(Cli& cli, AclOpts& o) {
  if (resources_of(o).empty()) {
    return usage_error(cli, "name a resource: --topic, --group, --cluster or --transactional-id");
  }
  if (o.allow_principals.empty() && o.deny_principals.empty()) {
    return usage_error(cli, "give --allow-principal and/or --deny-principal (User:name)");
  }
  auto pattern = pattern_of(o, "literal", false);
  if (!pattern.ok()) return usage_error(cli, pattern.status().message());
  auto bindings = bindings_of(o, *pattern);
  if (!bindings.ok()) return usage_error(cli, bindings.status().message());
  Status st = cli.client().create_acls(*bindings);
  if (!st.ok()) return fail(cli, st);
  print_bindings(cli, *bindings, "added " + std::to_string(bindings->size()) + " ACL(s):");
  return kExitOk;
}

int do_remove(Cli& cli, AclOpts& o) {
  if (resources_of(o).empty()) {
    return usage_error(cli, "name a resource: --topic, --group, --cluster or --transactional-id");
  }
  auto pattern = pattern_of(o, "literal", true);
  if (!pattern.ok()) return usage_error(cli, pattern.status().message());
  std::vector<client::AclBindingFilter> filters;
  if (o.allow_principals.empty() && o.deny_principals.empty()) {  // every ACL of the resources
    for (const auto& r : resources_of(o)) {
      filters.push_back({r.type, r.name, *pattern, std::nullopt, std::nullopt, 1, 1});
    }
  } else {
    auto bindings = bindings_of(o, *pattern);
    if (!bindings.ok()) return usage_error(cli, bindings.status().message());
    for (const auto& b : *bindings) {
      filters.push_back({b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host,
                         b.operation, b.permission});
    }
  }
  auto removed = cli.client().delete_acls(filters);
  if (!removed.ok()) return fail(cli, removed.status());
  print_bindings(cli, *removed, "removed " + std::to_string(removed->size()) + " ACL(s):");
  return kExitOk;
}

int do_list(Cli& cli, AclOpts& o) {
  auto pattern = pattern_of(o, "any", true);
  if (!pattern.ok()) return usage_error(cli, pattern.status().message());
  std::vector<client::AclBindingFilter> filters;
  for (const auto& r : resources_of(o)) {
    filters.push_back({r.type, r.name, *pattern, std::nullopt, std::nullopt, 1, 1});
  }
  if (filters.empty())
    filters.push_back({1, std::nullopt, *pattern, std::nullopt, std::nullopt, 1, 1});
  std::vector<client::AclBinding> all;
  for (const auto& p : o.principals.empty() ? std::vector<std::optional<std::string>>{std::nullopt}
                                            : std::vector<std::optional<std::string>>(
                                                  o.principals.begin(), o.principals.end())) {
    for (auto f : filters) {
      f.principal = p;
      auto found = cli.client().describe_acls(f);
      if (!found.ok()) return fail(cli, found.status());
      all.insert(all.end(), found->begin(), found->end());
    }
  }
  print_bindings(cli, all, "");
  return kExitOk;
}

void add_options(CLI::App* s, const std::shared_ptr<AclOpts>& o, bool list) {
  if (list) {
    s->add_option("--principal", o->principals, "Only the ACLs of this principal (User:name)");
  } else {
    s->add_option("--allow-principal", o->allow_principals, "Principal allowed (User:name)");
    s->add_option("--deny-principal", o->deny_principals, "Principal denied (User:name)");
    s->add_option("--allow-host", o->allow_hosts, "Host the allowed principals come from (*)");
    s->add_option("--deny-host", o->deny_hosts, "Host the denied principals come from (*)");
    s->add_option("--host", o->hosts, "Host for both allow and deny ACLs (default *)");
    s->add_option("--operation", o->operations,
                  "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                  "AlterConfigs, IdempotentWrite, All (default All)");
  }
  s->add_option("--topic", o->topics, "Topic resource ('*' = every topic)");
  s->add_option("--group", o->groups, "Consumer group resource ('*' = every group)");
  s->add_flag("--cluster", o->cluster, "The cluster resource");
  s->add_option("--transactional-id", o->transactional_ids, "Transactional id resource");
  s->add_option("--resource-pattern-type", o->pattern,
                list ? std::string("any (default), match, literal or prefixed")
                     : std::string("literal (default) or prefixed (remove: also match, any)"));
}

}  // namespace

void register_acl(CLI::App& app, Cli& cli) {
  auto* acl = app.add_subcommand("acl", "ACLs (authorizer.class.name must be set on the broker)");
  acl->require_subcommand(1);
  {
    auto o = std::make_shared<AclOpts>();
    auto* s = acl->add_subcommand("add", "Add ACLs (kafka-acls --add)");
    add_options(s, o, false);
    on_run(s, cli, o, do_add);
  }
  {
    auto o = std::make_shared<AclOpts>();
    auto* s = acl->add_subcommand("remove", "Remove ACLs (kafka-acls --remove)");
    add_options(s, o, false);
    on_run(s, cli, o, do_remove);
  }
  {
    auto o = std::make_shared<AclOpts>();
    auto* s = acl->add_subcommand("list", "List ACLs (kafka-acls --list)");
    add_options(s, o, true);
    on_run(s, cli, o, do_list);
  }
}

}  // namespace strata::cli
