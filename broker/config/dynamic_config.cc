// DynamicConfig and the config-admin helpers (see dynamic_config.h).
#include "broker/config/dynamic_config.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "broker/config/security_config.h"
#include "storage/file_util.h"

namespace strata::broker {
namespace {

constexpr std::string_view kFileName = "dynamic-broker-configs";
constexpr std::string_view kClusterTag = "cluster-default";
constexpr std::string_view kBrokerTag = "broker";

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    out.push_back(item.substr(b, item.find_last_not_of(' ') - b + 1));
  }
  return out;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

bool wanted(const std::vector<std::string>& keys, const std::string& name) {
  return keys.empty() || std::find(keys.begin(), keys.end(), name) != keys.end();
}

// A broker key's table entry; a listener.name.<l>.<key> override takes its key's.
const BrokerKeyDef* broker_def(std::string_view name) {
  const BrokerKeyDef* k = find_broker_key(name);
  return k ? k : listener_override_def(name);
}

}  // namespace

ConfigType topic_key_type(std::string_view name) {
  const TopicKeyDef* k = find_topic_key(name);
  return k ? k->type : ConfigType::unknown;
}

ConfigType broker_key_type(std::string_view name) {
  const BrokerKeyDef* k = broker_def(name);
  return k ? k->type : ConfigType::unknown;
}

ConfigEntryInfo describe_entry(const ConfigKeyInfo& key, std::vector<ConfigSynonymInfo> layers) {
  ConfigEntryInfo e;
  e.name = key.name;
  e.value = layers.empty() ? std::nullopt : layers.front().value;
  e.source = layers.empty() ? ConfigSource::default_config : layers.front().source;
  e.read_only = key.read_only();
  e.sensitive = key.sensitive();
  e.type = key.type;
  e.doc = key.doc;
  e.synonyms = std::move(layers);
  if (e.sensitive) {  // as Kafka: null value, in every synonym too
    e.value.reset();
    for (auto& s : e.synonyms) s.value.reset();
  }
  return e;
}

Result<ConfigMap> apply_alter_items(
    ConfigMap overrides, const std::vector<AlterItem>& items,
    ConfigType (*type_of)(std::string_view name),
    const std::function<std::string(const std::string&)>& effective) {
  for (const auto& item : items) {
    const ConfigType type = type_of(item.name);
    if (type == ConfigType::unknown) {
      return Status(Errc::invalid_argument, "Unknown config name: " + item.name);
    }
    switch (item.op) {
      case AlterOp::set:
        if (!item.value) {
          return Status(Errc::invalid_argument, "Null value not supported for: " + item.name);
        }
        overrides[item.name] = *item.value;
        break;
      case AlterOp::remove:
        overrides.erase(item.name);
        break;
      case AlterOp::append:
      case AlterOp::subtract: {
        const bool append = item.op == AlterOp::append;
        if (type != ConfigType::list) {
          return Status(Errc::invalid_argument, std::string("Config value ") +
                                                    (append ? "append" : "subtract") +
                                                    " is not allowed for config key: " + item.name);
        }
        auto it = overrides.find(item.name);
        auto current = split_list(it != overrides.end() ? it->second : effective(item.name));
        for (const auto& v : split_list(item.value.value_or(""))) {
          auto pos = std::find(current.begin(), current.end(), v);
          if (append && pos == current.end()) current.push_back(v);
          if (!append && pos != current.end()) current.erase(pos);
        }
        overrides[item.name] = join_list(current);
        break;
      }
    }
  }
  return overrides;
}

DynamicConfig::DynamicConfig(storage::Env* env, BrokerConfig static_config, std::string path)
    : env_(env), static_(std::move(static_config)), path_(std::move(path)) {}

Result<std::unique_ptr<DynamicConfig>> DynamicConfig::load(storage::Env* env,
                                                           const BrokerConfig& static_config) {
  if (static_config.log_dirs.empty()) return Status(Errc::invalid_argument, "no log dirs");
  std::unique_ptr<DynamicConfig> dc(new DynamicConfig(
      env, static_config, storage::join_path(static_config.log_dirs.front(), kFileName)));
  auto text = storage::read_file_to_string(env, dc->path_);
  if (!text.ok() && text.status().code() != Errc::not_found) return text.status();
  if (text.ok()) {
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty() || line[0] == '#') continue;
      auto sp = line.find(' ');
      auto eq = line.find('=', sp == std::string::npos ? 0 : sp);
      if (sp == std::string::npos || eq == std::string::npos) {
        return Status(Errc::corruption, dc->path_ + ": malformed line: " + line);
      }
      std::string tag = line.substr(0, sp);
      std::string key = line.substr(sp + 1, eq - sp - 1);
      std::string value = line.substr(eq + 1);
      if (tag == kClusterTag)
        dc->cluster_[key] = value;
      else if (tag == kBrokerTag)
        dc->broker_[key] = value;
      else
        return Status(Errc::corruption, dc->path_ + ": malformed line: " + line);
    }
  }
  auto eff = dc->build(dc->cluster_, dc->broker_);
  if (!eff.ok()) {
    return Status(eff.status().code(), dc->path_ + ": " + eff.status().message());
  }
  dc->effective_ = *eff;
  return dc;
}

Result<std::shared_ptr<const BrokerConfig>> DynamicConfig::build(const ConfigMap& cluster,
                                                                 const ConfigMap& broker) const {
  std::vector<std::string> lines;
  for (const auto& k : static_.explicit_keys) lines.push_back(k + "=" + static_.values.at(k));
  for (const auto& [k, v] : cluster) lines.push_back(k + "=" + v);
  for (const auto& [k, v] : broker) lines.push_back(k + "=" + v);
  auto c = parse_config("", lines);
  if (!c.ok()) return c.status();
  c->explicit_keys = static_.explicit_keys;
  return std::make_shared<const BrokerConfig>(std::move(*c));
}

std::shared_ptr<const BrokerConfig> DynamicConfig::effective() const {
  std::shared_lock lk(mu_);
  return effective_;
}

std::optional<std::string> DynamicConfig::value(const std::string& key) const {
  auto eff = effective();
  auto it = eff->values.find(key);
  if (it == eff->values.end()) return std::nullopt;
  return it->second;
}

ConfigMap DynamicConfig::overrides(bool cluster_default) const {
  std::shared_lock lk(mu_);
  return cluster_default ? cluster_ : broker_;
}

bool DynamicConfig::is_dynamic_key(std::string_view key) {
  if (is_reloadable_listener_key(key)) return true;
  const BrokerKeyDef* k = find_broker_key(key);
  return k && !k->read_only();
}

Status DynamicConfig::validate(bool cluster_default, const ConfigMap& overrides) const {
  return preview(cluster_default, overrides).status();
}

Result<std::shared_ptr<const BrokerConfig>> DynamicConfig::preview(
    bool cluster_default, const ConfigMap& overrides) const {
  for (const auto& [k, v] : overrides) {
    if (!broker_def(k)) return Status(Errc::invalid_argument, "Unknown broker config name: " + k);
    if (!is_dynamic_key(k)) {
      return Status(Errc::invalid_argument, "Cannot update these configs dynamically: " + k);
    }
    if (cluster_default && is_listener_override(k)) {
      // A listener's key and trust stores belong to one broker, as in Kafka.
      return Status(Errc::invalid_argument,
                    "Cannot update these configs at default cluster level, broker id must be "
                    "specified: " +
                        k);
    }
    if (v.find_first_of("\r\n") != std::string::npos) {
      return Status(Errc::invalid_argument,
                    "Invalid value for configuration " + k + ": line break");
    }
  }
  ConfigMap cluster, broker;
  {
    std::shared_lock lk(mu_);
    cluster = cluster_;
    broker = broker_;
  }
  (cluster_default ? cluster : broker) = overrides;
  return build(cluster, broker);
}

Result<std::shared_ptr<const BrokerConfig>> DynamicConfig::replace(bool cluster_default,
                                                                   ConfigMap overrides) {
  std::lock_guard wl(write_mu_);
  STRATA_RETURN_IF_ERROR(validate(cluster_default, overrides));
  ConfigMap cluster = this->overrides(true), broker = this->overrides(false);
  (cluster_default ? cluster : broker) = std::move(overrides);
  auto eff = build(cluster, broker);
  if (!eff.ok()) return eff.status();
  std::string text =
      "# Dynamic broker configs (AlterConfigs on BROKER resources). Written by the "
      "broker; do not edit while it runs.\n";
  for (const auto& [k, v] : cluster) text += std::string(kClusterTag) + " " + k + "=" + v + "\n";
  for (const auto& [k, v] : broker) text += std::string(kBrokerTag) + " " + k + "=" + v + "\n";
  STRATA_RETURN_IF_ERROR(storage::write_file_atomically(env_, path_, text));
  std::unique_lock lk(mu_);
  cluster_ = std::move(cluster);
  broker_ = std::move(broker);
  effective_ = *eff;
  return effective_;
}

std::vector<ConfigSynonymInfo> DynamicConfig::broker_layers(const std::string& key) const {
  std::vector<ConfigSynonymInfo> out;
  const BrokerKeyDef* def = broker_def(key);
  if (!def) return out;
  if (auto it = broker_.find(key); it != broker_.end()) {
    out.push_back({key, it->second, ConfigSource::dynamic_broker});
  }
  if (auto it = cluster_.find(key); it != cluster_.end()) {
    out.push_back({key, it->second, ConfigSource::dynamic_default_broker});
  }
  if (static_.explicit_keys.count(key)) {
    out.push_back({key, static_.values.at(key), ConfigSource::static_broker});
  }
  if (is_listener_override(key)) {
    // Below a listener's own value come the broker-wide key's layers (Kafka's synonyms).
    auto below = broker_layers(def->name);
    out.insert(out.end(), below.begin(), below.end());
    return out;
  }
  out.push_back({key, def->default_value, ConfigSource::default_config});
  return out;
}

std::vector<ConfigEntryInfo> DynamicConfig::describe_broker(
    bool cluster_default, const std::vector<std::string>& keys) const {
  std::shared_lock lk(mu_);
  std::vector<ConfigEntryInfo> out;
  for (const auto& k : config_keys()) {
    const std::string name = k.name;
    if (!wanted(keys, name)) continue;
    auto layers = broker_layers(name);
    if (cluster_default) {
      // The cluster-default resource shows only what was set on it, as Kafka does.
      auto it = cluster_.find(name);
      if (it == cluster_.end()) continue;
      layers = {{name, it->second, ConfigSource::dynamic_default_broker}};
    }
    out.push_back(describe_entry(k, std::move(layers)));
  }
  if (cluster_default) return out;
  // Per-listener overrides that are set (they have no default of their own to list otherwise).
  std::set<std::string> set_overrides;
  for (const auto& [k, v] : broker_) {
    if (is_listener_override(k)) set_overrides.insert(k);
  }
  for (const auto& k : static_.explicit_keys) {
    if (is_listener_override(k)) set_overrides.insert(k);
  }
  for (const auto& name : set_overrides) {
    const BrokerKeyDef* def = broker_def(name);
    if (!def || !wanted(keys, name)) continue;
    ConfigKeyInfo info = *def;
    info.name = name;
    info.flags = def->flags & ~kConfigReadOnly;
    if (!is_reloadable_listener_key(name)) info.flags |= kConfigReadOnly;
    out.push_back(describe_entry(info, broker_layers(name)));
  }
  return out;
}

std::vector<ConfigEntryInfo> DynamicConfig::describe_topic(
    const ConfigMap& topic_overrides, const std::vector<std::string>& keys) const {
  std::shared_lock lk(mu_);
  std::vector<ConfigEntryInfo> out;
  for (const auto& k : topic_key_table()) {
    const std::string name = k.name;
    if (!wanted(keys, name)) continue;
    std::vector<ConfigSynonymInfo> synonyms;
    if (auto it = topic_overrides.find(name); it != topic_overrides.end()) {
      synonyms.push_back({name, it->second, ConfigSource::dynamic_topic});
    }
    auto layers = broker_layers(k.synonym);
    if (layers.empty()) {
      layers.push_back({name, k.default_value, ConfigSource::default_config});
    }
    synonyms.insert(synonyms.end(), layers.begin(), layers.end());
    out.push_back(describe_entry(k, std::move(synonyms)));
  }
  // Per-column table keys exist only where set.
  for (const auto& [name, value] : topic_overrides) {
    const TopicKeyDef* k = find_topic_key(name);
    if (!k || !wanted(keys, name) || k->name == name) continue;
    ConfigKeyInfo info = *k;
    info.name = name;
    out.push_back(describe_entry(info, {{name, value, ConfigSource::dynamic_topic}}));
  }
  return out;
}

}  // namespace strata::broker
