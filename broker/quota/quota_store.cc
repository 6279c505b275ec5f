// QuotaStore (see quota_store.h).
#include "broker/quota/quota_store.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "protocol/base/percent_escape.h"
#include "storage/file_util.h"

namespace strata::broker::quota {
namespace {

constexpr std::string_view kFileName = "client-quotas";

bool is_byte_rate(std::string_view key) {
  return key == kProducerByteRate || key == kConsumerByteRate;
}

bool known_key(std::string_view key) { return is_byte_rate(key) || key == kRequestPercentage; }

bool known_type(std::string_view t) { return t == kClientIdType || t == kUserType || t == kIpType; }

// Entity names: printable ASCII but for the entity separators (',' between parts, '=' inside one).
std::string escape(const std::string& s) {
  return percent_escape(s, [](unsigned char c) { return printable_except(c, ",="); });
}

std::optional<std::string> unescape(std::string_view s) { return percent_unescape(s); }

std::string encode_entity(const QuotaEntity& e) {
  std::string out;
  for (const auto& [type, name] : e) {
    if (!out.empty()) out += ',';
    out += type;
    if (name) {
      out += '=';
      out += escape(*name);
    }
  }
  return out;
}

std::optional<QuotaEntity> decode_entity(std::string_view s) {
  QuotaEntity e;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string_view part = s.substr(pos, comma == std::string_view::npos ? s.npos : comma - pos);
    size_t eq = part.find('=');
    if (eq == std::string_view::npos) {
      e.emplace_back(std::string(part), std::nullopt);
    } else {
      auto name = unescape(part.substr(eq + 1));
      if (!name) return std::nullopt;
      e.emplace_back(std::string(part.substr(0, eq)), std::move(*name));
    }
    if (e.back().first.empty()) return std::nullopt;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::sort(e.begin(), e.end());
  return e;
}

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string entity_to_string(const QuotaEntity& e) {
  std::string out;
  auto add = [&](const EntityPart& p) {
    if (!out.empty()) out += ',';
    out += p.first;
    out += '=';
    out += p.second ? *p.second : "<default>";
  };
  // the user first, as Kafka names these entities (user, then client id)
  for (const auto& p : e) {
    if (p.first == kUserType) add(p);
  }
  for (const auto& p : e) {
    if (p.first != kUserType) add(p);
  }
  return out;
}

QuotaEntity level_entity(QuotaLevel level, std::string_view user, std::string_view client_id) {
  using L = QuotaLevel;
  const std::optional<std::string> u(std::in_place, user), c(std::in_place, client_id);
  const std::optional<std::string> none;
  auto both = [](std::optional<std::string> cl, std::optional<std::string> us) {
    return QuotaEntity{{std::string(kClientIdType), std::move(cl)},
                       {std::string(kUserType), std::move(us)}};
  };
  switch (level) {
    case L::user_client:
      return both(c, u);
    case L::user_default_client:
      return both(none, u);
    case L::user:
      return {{std::string(kUserType), u}};
    case L::default_user_client:
      return both(c, none);
    case L::default_user_default_client:
      return both(none, none);
    case L::default_user:
      return {{std::string(kUserType), none}};
    case L::client:
      return {{std::string(kClientIdType), c}};
    case L::default_client:
      break;
  }
  return {{std::string(kClientIdType), none}};
}

Result<std::unique_ptr<QuotaStore>> QuotaStore::open(storage::Env* env, const std::string& dir) {
  std::unique_ptr<QuotaStore> store(new QuotaStore(env, storage::join_path(dir, kFileName)));
  auto lines = storage::read_line_file(env, store->path_);
  if (!lines.ok()) return lines.status();
  for (const auto& line : *lines) {
    auto t1 = line.find('\t');
    auto t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    std::optional<QuotaEntity> entity;
    if (t2 != std::string::npos) entity = decode_entity(std::string_view(line).substr(0, t1));
    const std::string key = t2 == std::string::npos ? "" : line.substr(t1 + 1, t2 - t1 - 1);
    const std::string value = t2 == std::string::npos ? "" : line.substr(t2 + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (!entity || !known_key(key) || value.empty() || end != value.c_str() + value.size()) {
      return Status(Errc::corruption, store->path_ + ": malformed line: " + line);
    }
    store->quotas_[*entity][key] = v;
  }
  store->index_levels();
  return store;
}

Status QuotaStore::validate(const QuotaAlteration& a) {
  if (a.entity.empty()) return Status(Errc::invalid_argument, "Invalid empty client quota entity");
  std::set<std::string> types;
  for (const auto& [type, name] : a.entity) {
    if (!types.insert(type).second) {
      return Status(Errc::invalid_argument,
                    "Invalid client quota entity, duplicate entity entry " + type);
    }
    if (!known_type(type)) {
      return Status(Errc::invalid_argument, "Unhandled client quota entity type: " + type);
    }
    if (type == kIpType) {
      // Kafka's ip entities carry connection_creation_rate only: no such quota here.
      return Status(Errc::invalid_argument,
                    "Quota entity type ip is not supported (no connection rate quotas)");
    }
    if (name && name->empty())
      return Status(Errc::invalid_argument, "Empty " + type + " not supported");
  }
  std::set<std::string> keys;
  for (const auto& [key, value] : a.ops) {
    if (!keys.insert(key).second) {
      return Status(Errc::invalid_argument, "Duplicate quota key " + key +
                                                " not updating quota for this entity " +
                                                entity_to_string(a.entity));
    }
    if (!known_key(key)) return Status(Errc::invalid_argument, "Invalid configuration key " + key);
    if (!value) continue;  // removal
    if (!std::isfinite(*value) || *value <= 0) {
      return Status(
          Errc::invalid_argument,
          "Configuration " + key + " must be a positive number, not " + format_value(*value));
    }
    if (is_byte_rate(key) && std::abs(*value - std::round(*value)) > 1e-6) {
      return Status(Errc::invalid_argument, "Configuration " + key + " must be a Long value");
    }
  }
  return Status::Ok();
}

std::vector<Status> QuotaStore::alter(const std::vector<QuotaAlteration>& alterations,
                                      bool validate_only) {
  std::lock_guard wl(write_mu_);
  std::map<QuotaEntity, QuotaValues> next;
  {
    std::shared_lock lk(mu_);
    next = quotas_;
  }
  std::vector<Status> out;
  std::set<QuotaEntity> seen;
  bool changed = false;
  for (const auto& a : alterations) {
    Status st = validate(a);
    QuotaEntity entity = a.entity;
    std::sort(entity.begin(), entity.end());
    if (st.ok() && !seen.insert(entity).second) {
      st = Status(Errc::invalid_argument, "Ignoring duplicate entity " + entity_to_string(entity));
    }
    if (st.ok()) {
      auto& values = next[entity];
      for (const auto& [key, value] : a.ops) {
        if (value) {
          changed |= values.count(key) == 0 || values[key] != *value;
          values[key] = *value;
        } else {
          changed |= values.erase(key) > 0;
        }
      }
      if (values.empty()) next.erase(entity);
    }
    out.push_back(std::move(st));
  }
  if (validate_only || !changed) return out;
  Status written = persist(next);
  if (!written.ok()) {
    for (auto& st : out) {
      if (st.ok()) st = written;
    }
    return out;
  }
  std::unique_lock lk(mu_);
  quotas_ = std::move(next);
  index_levels();
  return out;
}

void QuotaStore::index_levels() {
  levels_ = 0;
  for (const auto& [entity, values] : quotas_) {
    const EntityPart* user = nullptr;
    const EntityPart* client = nullptr;
    for (const auto& p : entity) {
      if (p.first == kUserType) user = &p;
      if (p.first == kClientIdType) client = &p;
    }
    if (entity.size() != (user ? 1u : 0u) + (client ? 1u : 0u)) continue;  // never validated
    using L = QuotaLevel;
    L level;
    if (user && client) {
      level = user->second
                  ? (client->second ? L::user_client : L::user_default_client)
                  : (client->second ? L::default_user_client : L::default_user_default_client);
    } else if (user) {
      level = user->second ? L::user : L::default_user;
    } else if (client) {
      level = client->second ? L::client : L::default_client;
    } else {
      continue;
    }
    levels_ |= 1u << static_cast<int>(level);
  }
}

Status QuotaStore::persist(const std::map<QuotaEntity, QuotaValues>& all) const {
  std::string text = "# client quotas (AlterClientQuotas): entity, key, value\n";
  for (const auto& [entity, values] : all) {
    for (const auto& [key, value] : values) {
      text += encode_entity(entity);
      text += '\t';
      text += key;
      text += '\t';
      text += format_value(value);
      text += '\n';
    }
  }
  return storage::write_file_atomically(env_, path_, text);
}

Result<std::vector<std::pair<QuotaEntity, QuotaValues>>> QuotaStore::describe(
    const std::vector<FilterComponent>& filter, bool strict) const {
  std::set<std::string> types;
  for (const auto& c : filter) {
    if (c.entity_type.empty()) {
      return Status(Errc::invalid_argument, "Unexpected empty filter component entity type");
    }
    if (!types.insert(c.entity_type).second) {
      return Status(Errc::invalid_argument,
                    "Duplicate " + c.entity_type + " filter component entity type");
    }
    if (!known_type(c.entity_type)) {
      return Status(Errc::unsupported, "Custom entity type " + c.entity_type + " not supported");
    }
    if (c.match_type == MatchType::exact && !c.match) {
      return Status(Errc::invalid_argument, "Exact match on " + c.entity_type + " needs a name");
    }
    if (c.match_type != MatchType::exact && c.match_type != MatchType::default_ &&
        c.match_type != MatchType::any) {
      return Status(Errc::invalid_argument,
                    "Unexpected match type " + std::to_string(static_cast<int>(c.match_type)));
    }
  }
  if (types.count(std::string(kIpType)) && types.size() > 1) {
    return Status(Errc::invalid_argument,
                  "Invalid entity filter component combination, IP filter component should not "
                  "be used with User or ClientId filter component.");
  }
  std::vector<std::pair<QuotaEntity, QuotaValues>> out;
  if (filter.empty() && strict) return out;
  std::shared_lock lk(mu_);
  for (const auto& [entity, values] : quotas_) {
    bool ok = true;
    for (const auto& c : filter) {
      auto part = std::find_if(entity.begin(), entity.end(),
                               [&](const EntityPart& p) { return p.first == c.entity_type; });
      if (part == entity.end()) {
        ok = false;
      } else if (c.match_type == MatchType::exact) {
        ok = part->second == c.match;
      } else if (c.match_type == MatchType::default_) {
        ok = !part->second.has_value();
      }
      if (!ok) break;
    }
    if (ok && strict) {
      for (const auto& p : entity) ok = ok && types.count(p.first) > 0;
    }
    if (ok) out.emplace_back(entity, values);
  }
  return out;
}

std::optional<ResolvedQuota> QuotaStore::resolve(std::string_view user, std::string_view client_id,
                                                 std::string_view key) const {
  std::shared_lock lk(mu_);
  for (int i = 0; i < kQuotaLevels; ++i) {
    if ((levels_ & (1u << i)) == 0) continue;  // no entity of this shape at all
    const auto level = static_cast<QuotaLevel>(i);
    auto it = quotas_.find(level_entity(level, user, client_id));
    if (it == quotas_.end()) continue;
    auto v = it->second.find(std::string(key));
    if (v != it->second.end()) return ResolvedQuota{v->second, level};
  }
  return std::nullopt;
}

bool QuotaStore::any(std::string_view key) const {
  std::shared_lock lk(mu_);
  for (const auto& [entity, values] : quotas_) {
    if (values.count(std::string(key))) return true;
  }
  return false;
}

}  // namespace strata::broker::quota
