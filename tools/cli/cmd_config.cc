// `strata config describe|set|delete (--topic T | --broker [ID])`: topic and broker configs
// (DescribeConfigs / IncrementalAlterConfigs).
#include <iostream>

#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

struct ConfigOpts {
  std::optional<std::string> topic;
  std::optional<std::string> broker;  // "" = the bootstrap broker's id
  bool broker_given = false;
  std::vector<std::string> items;  // k=v for set, k for delete, filter keys for describe
};

// `--broker` takes an optional value, so CLI11 hands it the next word even when that word is a
// key (`config set --broker compression.type=gzip`). After parsing, a value that is not a broker
// id goes back to the front of the key list and the controller is used; a value that starts like
// a number but is not one ("1abc", "-1") is a usage error.
Status normalize_broker(ConfigOpts& o) {
  if (!o.broker_given || !o.broker || o.broker->empty()) return Status::Ok();
  const std::string& v = *o.broker;
  if (client::parse_node_id(v)) return Status::Ok();
  const bool numeric_like = v[0] == '-' || v[0] == '+' || (v[0] >= '0' && v[0] <= '9');
  if (numeric_like && v.find('=') == std::string::npos) {
    return Status(Errc::invalid_argument, "USAGE: bad broker id '" + v + "'");
  }
  o.items.insert(o.items.begin(), v);
  o.broker->clear();
  return Status::Ok();
}

// Resolves the resource; the default broker id is the controller (or first broker).
Result<std::pair<client::ResourceType, std::string>> resource_of(Cli& cli, ConfigOpts& o) {
  if (Status st = normalize_broker(o); !st.ok()) return st;
  if (o.topic.has_value() == o.broker_given) {
    return Status(Errc::invalid_argument, "USAGE: give exactly one of --topic T or --broker [ID]");
  }
  if (o.topic) return std::make_pair(client::ResourceType::topic, *o.topic);
  if (o.broker && !o.broker->empty()) {
    return std::make_pair(client::ResourceType::broker, *o.broker);
  }
  auto cl = cli.client().describe_cluster();
  if (!cl.ok()) return cl.status();
  int32_t id = cl->controller_id;
  if (id < 0 && !cl->brokers.empty()) id = cl->brokers.front().node_id;
  return std::make_pair(client::ResourceType::broker, std::to_string(id));
}

json resource_json(const std::pair<client::ResourceType, std::string>& r) {
  return json{{"type", r.first == client::ResourceType::topic ? "topic" : "broker"},
              {"name", r.second}};
}

int do_describe(Cli& cli, ConfigOpts& o) {
  auto res = resource_of(cli, o);
  if (!res.ok()) {
    return client::error_name_of(res.status()) == "USAGE"
               ? usage_error(cli, res.status().message().substr(7))  // drop "USAGE: "
               : fail(cli, res.status());
  }
  auto cfgs = cli.client().describe_configs(res->first, res->second, o.items);
  if (!cfgs.ok()) return fail(cli, cfgs.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& e : *cfgs) {
      arr.push_back({{"name", e.name},
                     {"value", jbytes(e.value)},
                     {"source", client::config_source_name(e.source)},
                     {"read_only", e.read_only},
                     {"sensitive", e.sensitive}});
    }
    print_json({{"resource", resource_json(*res)}, {"configs", arr}});
  } else {
    TextTable tt({"CONFIG", "VALUE", "SOURCE", "READ-ONLY"});
    for (const auto& e : *cfgs) {
      tt.add({e.name, e.sensitive ? "(sensitive)" : show(e.value),
              client::config_source_name(e.source), e.read_only ? "yes" : "no"});
    }
    tt.print();
  }
  return kExitOk;
}

int do_alter(Cli& cli, ConfigOpts& o, bool remove) {
  if (!normalize_broker(o).ok()) return usage_error(cli, "bad broker id '" + *o.broker + "'");
  if (o.items.empty()) return usage_error(cli, remove ? "give KEY..." : "give KEY=VALUE...");
  std::vector<client::ConfigChange> changes;
  json shown = remove ? json::array() : json::object();
  for (const auto& it : o.items) {
    if (remove) {
      changes.push_back({it, client::ConfigOp::remove, std::nullopt});
      shown.push_back(it);
    } else {
      auto kv = split_kv(it);
      if (!kv.ok()) return usage_error(cli, kv.status().message());
      changes.push_back({kv->first, client::ConfigOp::set, kv->second});
      shown[kv->first] = kv->second;
    }
  }
  auto res = resource_of(cli, o);
  if (!res.ok()) {
    return client::error_name_of(res.status()) == "USAGE"
               ? usage_error(cli, res.status().message().substr(7))  // drop "USAGE: "
               : fail(cli, res.status());
  }
  Status st = cli.client().alter_configs(res->first, res->second, changes);
  if (!st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    print_json({{"resource", resource_json(*res)}, {remove ? "deleted" : "set", shown}});
  } else {
    std::cout << (remove ? "deleted " : "set ") << changes.size() << " config(s) on "
              << (res->first == client::ResourceType::topic ? "topic " : "broker ") << res->second
              << "\n";
  }
  return kExitOk;
}

void add_resource_options(CLI::App* s, const std::shared_ptr<ConfigOpts>& o) {
  s->add_option("--topic,-t", o->topic, "Topic name");
  s->add_option("--broker", o->broker, "Broker id (default: the controller)")->expected(0, 1);
}

}  // namespace

void register_config(CLI::App& app, Cli& cli) {
  auto* config = app.add_subcommand("config", "Topic and broker configs");
  config->require_subcommand(1);
  {
    auto o = std::make_shared<ConfigOpts>();
    auto* s = config->add_subcommand("describe", "Show configs with their sources");
    add_resource_options(s, o);
    s->add_option("keys", o->items, "Only these keys");
    s->callback([&cli, o, s] {
      if (s->count("--broker") > 0) o->broker_given = true;
      cli.action = [&cli, o] { return do_describe(cli, *o); };
    });
  }
  {
    auto o = std::make_shared<ConfigOpts>();
    auto* s = config->add_subcommand("set", "Set configs KEY=VALUE...");
    add_resource_options(s, o);
    s->add_option("items", o->items, "KEY=VALUE pairs");
    s->callback([&cli, o, s] {
      if (s->count("--broker") > 0) o->broker_given = true;
      cli.action = [&cli, o] { return do_alter(cli, *o, false); };
    });
  }
  {
    auto o = std::make_shared<ConfigOpts>();
    auto* s = config->add_subcommand("delete", "Remove configs KEY... (back to defaults)");
    add_resource_options(s, o);
    s->add_option("keys", o->items, "Keys");
    s->callback([&cli, o, s] {
      if (s->count("--broker") > 0) o->broker_given = true;
      cli.action = [&cli, o] { return do_alter(cli, *o, true); };
    });
  }
}

}  // namespace strata::cli
