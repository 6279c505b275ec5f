#include "broker/security/acl.h"

#include <algorithm>
#include <mutex>

namespace strata::broker::security {

namespace {

bool concrete(ResourceType t) { return t != ResourceType::any; }
bool concrete(PatternType p) { return p == PatternType::literal || p == PatternType::prefixed; }
bool concrete(AclOperation o) { return o != AclOperation::any; }
bool concrete(AclPermission p) { return p != AclPermission::any; }

bool resource_matches(const AclBinding& b, ResourceType type, const std::string& name) {
  if (b.resource_type != type) return false;
  if (b.pattern == PatternType::literal) {
    return b.resource_name == name || b.resource_name == kWildcard;
  }
  return name.compare(0, b.resource_name.size(), b.resource_name) == 0;
}

bool principal_matches(const AclBinding& b, const std::string& principal, const std::string& host) {
  return (b.principal == principal || b.principal == kAnyUser) &&
         (b.host == host || b.host == kWildcard);
}

// The operations whose ALLOW permits `op` (besides ALL).
bool allows(AclOperation granted, AclOperation op) {
  if (granted == op || granted == AclOperation::all) return true;
  if (op == AclOperation::describe) {
    return granted == AclOperation::read || granted == AclOperation::write ||
           granted == AclOperation::del || granted == AclOperation::alter;
  }
  if (op == AclOperation::describe_configs) return granted == AclOperation::alter_configs;
  return false;
}

}  // namespace

bool valid_binding(const AclBinding& b) {
  if (!concrete(b.resource_type) || !concrete(b.pattern) || !concrete(b.operation) ||
      !concrete(b.permission)) {
    return false;
  }
  if (b.resource_name.empty() || b.host.empty()) return false;
  if (b.pattern == PatternType::prefixed && b.resource_name == kWildcard) return false;
  const size_t colon = b.principal.find(':');
  return colon != std::string::npos && colon > 0 && colon + 1 < b.principal.size();
}

bool AclFilter::matches(const AclBinding& b) const {
  if (resource_type != ResourceType::any && b.resource_type != resource_type) return false;
  if (principal && b.principal != *principal) return false;
  if (host && b.host != *host) return false;
  if (operation != AclOperation::any && b.operation != operation) return false;
  if (permission != AclPermission::any && b.permission != permission) return false;
  switch (pattern) {
    case PatternType::any:
      return !resource_name || b.resource_name == *resource_name;
    case PatternType::match:
      return !resource_name || resource_matches(b, b.resource_type, *resource_name);
    case PatternType::literal:
    case PatternType::prefixed:
      return b.pattern == pattern && (!resource_name || b.resource_name == *resource_name);
  }
  return false;
}

size_t AclStore::add(const std::vector<AclBinding>& bindings) {
  std::unique_lock lk(mu_);
  size_t added = 0;
  for (const auto& b : bindings) {
    PerType& t = by_type_[b.resource_type];
    Bindings& list = b.pattern == PatternType::literal ? t.literal[b.resource_name]
                                                       : t.prefixed[b.resource_name];
    if (std::find(list.begin(), list.end(), b) != list.end()) continue;
    list.push_back(b);
    ++added;
  }
  size_ += added;
  return added;
}

std::vector<AclBinding> AclStore::remove(const AclFilter& filter) {
  std::unique_lock lk(mu_);
  std::vector<AclBinding> removed;
  auto sweep = [&](auto& index) {
    for (auto it = index.begin(); it != index.end();) {
      Bindings& list = it->second;
      for (auto b = list.begin(); b != list.end();) {
        if (filter.matches(*b)) {
          removed.push_back(*b);
          b = list.erase(b);
        } else {
          ++b;
        }
      }
      it = list.empty() ? index.erase(it) : std::next(it);
    }
  };
  for (auto& [type, t] : by_type_) {
    sweep(t.literal);
    sweep(t.prefixed);
  }
  size_ -= removed.size();
  std::sort(removed.begin(), removed.end());
  return removed;
}

std::vector<AclBinding> AclStore::list(const AclFilter& filter) const {
  std::shared_lock lk(mu_);
  std::vector<AclBinding> out;
  for (const auto& [type, t] : by_type_) {
    for (const auto& [name, list] : t.literal) {
      for (const auto& b : list) {
        if (filter.matches(b)) out.push_back(b);
      }
    }
    for (const auto& [name, list] : t.prefixed) {
      for (const auto& b : list) {
        if (filter.matches(b)) out.push_back(b);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t AclStore::size() const {
  std::shared_lock lk(mu_);
  return size_;
}

template <typename Fn>
void AclStore::for_matching(ResourceType type, const std::string& name, Fn&& fn) const {
  auto t = by_type_.find(type);
  if (t == by_type_.end()) return;
  for (const char* key : {name.c_str(), kWildcard}) {
    auto it = t->second.literal.find(key);
    if (it != t->second.literal.end()) {
      for (const auto& b : it->second) fn(b);
    }
    if (name == kWildcard) break;
  }
  // Prefixes of `name`: each is looked up exactly (at most name.size() probes).
  const auto& prefixed = t->second.prefixed;
  if (prefixed.empty()) return;
  const std::string_view whole(name);
  for (size_t len = 1; len <= whole.size(); ++len) {
    auto it = prefixed.find(whole.substr(0, len));
    if (it != prefixed.end()) {
      for (const auto& b : it->second) fn(b);
    }
  }
}

bool AclStore::authorize(const std::string& principal, const std::string& host, AclOperation op,
                         ResourceType type, const std::string& name) const {
  if (config_.super_users.count(principal)) return true;
  std::shared_lock lk(mu_);
  bool any_acl = false, denied = false, allowed = false;
  for_matching(type, name, [&](const AclBinding& b) {
    any_acl = true;
    if (!principal_matches(b, principal, host)) return;
    if (b.permission == AclPermission::deny &&
        (b.operation == op || b.operation == AclOperation::all)) {
      denied = true;
    } else if (b.permission == AclPermission::allow && allows(b.operation, op)) {
      allowed = true;
    }
  });
  if (denied) return false;
  if (allowed) return true;
  return !any_acl && config_.allow_everyone_if_no_acl_found;
}

bool AclStore::authorize_any(const std::string& principal, const std::string& host, AclOperation op,
                             ResourceType type) const {
  // Kafka checks a name no ACL names first, so super users and allow.everyone pass as they would.
  if (authorize(principal, host, op, type, "hardcode")) return true;
  std::shared_lock lk(mu_);
  auto t = by_type_.find(type);
  if (t == by_type_.end()) return false;
  std::set<std::string> deny_literal, deny_prefix, allow_literal, allow_prefix;
  bool wildcard_allow = false;
  auto visit = [&](const AclBinding& b) {
    if (!principal_matches(b, principal, host)) return true;
    if (b.operation != op && b.operation != AclOperation::all) return true;
    const bool literal = b.pattern == PatternType::literal;
    if (b.permission == AclPermission::deny) {
      if (literal && b.resource_name == kWildcard) return false;  // denied everywhere
      (literal ? deny_literal : deny_prefix).insert(b.resource_name);
    } else if (literal && b.resource_name == kWildcard) {
      wildcard_allow = true;
    } else {
      (literal ? allow_literal : allow_prefix).insert(b.resource_name);
    }
    return true;
  };
  for (const auto& [name, list] : t->second.literal) {
    for (const auto& b : list) {
      if (!visit(b)) return false;
    }
  }
  for (const auto& [name, list] : t->second.prefixed) {
    for (const auto& b : list) {
      if (!visit(b)) return false;
    }
  }
  if (wildcard_allow) return true;
  auto dominated = [&](const std::string& name) {
    for (size_t len = 1; len <= name.size(); ++len) {
      if (deny_prefix.count(name.substr(0, len))) return true;
    }
    return false;
  };
  for (const auto& name : allow_literal) {
    if (!deny_literal.count(name) && !dominated(name)) return true;
  }
  for (const auto& name : allow_prefix) {
    if (!dominated(name)) return true;
  }
  return false;
}

void AclStore::reset(const std::vector<AclBinding>& bindings) {
  std::unique_lock lk(mu_);
  by_type_.clear();
  size_ = 0;
  for (const auto& b : bindings) {
    PerType& t = by_type_[b.resource_type];
    Bindings& list = b.pattern == PatternType::literal ? t.literal[b.resource_name]
                                                       : t.prefixed[b.resource_name];
    if (std::find(list.begin(), list.end(), b) != list.end()) continue;
    list.push_back(b);
    ++size_;
  }
}

}  // namespace strata::broker::security
