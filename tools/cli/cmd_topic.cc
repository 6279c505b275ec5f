// `strata topic ...`: create, list, describe (partitions, leaders, offsets, configs with
// sources), alter (partitions, configs), delete.
#include <iostream>

#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

struct TopicOpts {
  std::string name;
  int32_t partitions = 1;
  std::optional<int32_t> new_partitions;
  int16_t replication_factor = 1;
  std::vector<std::string> configs;
  std::vector<std::string> delete_configs;
  bool include_internal = false;
};

std::string join_ints(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

int do_create(Cli& cli, const TopicOpts& o) {
  auto cfg = parse_kvs(o.configs);
  if (!cfg.ok()) return usage_error(cli, cfg.status().message());
  client::TopicSpec spec{o.name, o.partitions, o.replication_factor, *cfg};
  auto r = cli.client().create_topic(spec);
  if (!r.ok()) return fail(cli, r.status());
  if (cli.json_out()) {
    json c = json::object();
    for (const auto& [k, v] : spec.configs) c[k] = v;
    print_json({{"topic", r->name},
                {"topic_id", r->topic_id},
                {"partitions", r->partitions},
                {"configs", c}});
  } else {
    std::cout << "created topic " << r->name << " (" << r->partitions << " partitions)\n";
  }
  return kExitOk;
}

int do_list(Cli& cli, const TopicOpts& o) {
  auto md = cli.client().metadata(std::nullopt);
  if (!md.ok()) return fail(cli, md.status());
  json arr = json::array();
  TextTable tt({"NAME", "PARTITIONS", "TOPIC-ID"});
  for (const auto& t : md->topics) {
    if (t.internal && !o.include_internal) continue;
    arr.push_back({{"name", t.name},
                   {"partitions", t.partitions.size()},
                   {"topic_id", t.topic_id},
                   {"internal", t.internal}});
    tt.add({t.name, std::to_string(t.partitions.size()), t.topic_id});
  }
  if (cli.json_out()) {
    print_json({{"topics", arr}});
  } else {
    tt.print();
  }
  return kExitOk;
}

int do_describe(Cli& cli, const TopicOpts& o) {
  auto& c = cli.client();
  auto t = c.topic(o.name);
  if (!t.ok()) return fail(cli, t.status());
  auto starts = c.list_offsets(o.name, client::kEarliest);
  if (!starts.ok()) return fail(cli, starts.status());
  auto ends = c.list_offsets(o.name, client::kLatest);
  if (!ends.ok()) return fail(cli, ends.status());
  auto cfgs = c.describe_configs(client::ResourceType::topic, o.name);
  if (!cfgs.ok()) return fail(cli, cfgs.status());
  std::map<int32_t, std::pair<int64_t, int64_t>> offs;
  for (const auto& s : *starts) offs[s.partition].first = s.offset;
  for (const auto& e : *ends) offs[e.partition].second = e.offset;
  if (cli.json_out()) {
    json parts = json::array();
    for (const auto& p : t->partitions) {
      parts.push_back({{"partition", p.partition},
                       {"leader", p.leader},
                       {"leader_epoch", p.leader_epoch},
                       {"replicas", p.replicas},
                       {"isr", p.isr},
                       {"log_start_offset", offs[p.partition].first},
                       {"log_end_offset", offs[p.partition].second}});
    }
    json configs = json::array();
    for (const auto& e : *cfgs) {
      configs.push_back({{"name", e.name},
                         {"value", jbytes(e.value)},
                         {"source", client::config_source_name(e.source)},
                         {"read_only", e.read_only},
                         {"sensitive", e.sensitive}});
    }
    print_json({{"name", t->name},
                {"topic_id", t->topic_id},
                {"internal", t->internal},
                {"partitions", parts},
                {"configs", configs}});
    return kExitOk;
  }
  std::cout << "topic " << t->name << "  id " << t->topic_id << "  partitions "
            << t->partitions.size() << "\n\n";
  TextTable pt({"PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START", "LOG-END"});
  for (const auto& p : t->partitions) {
    pt.add({std::to_string(p.partition), std::to_string(p.leader), join_ints(p.replicas),
            join_ints(p.isr), std::to_string(offs[p.partition].first),
            std::to_string(offs[p.partition].second)});
  }
  pt.print();
  std::cout << "\n";
  TextTable ct({"CONFIG", "VALUE", "SOURCE"});
  for (const auto& e : *cfgs) {
    ct.add({e.name, e.sensitive ? "(sensitive)" : show(e.value),
            client::config_source_name(e.source)});
  }
  ct.print();
  return kExitOk;
}

int do_alter(Cli& cli, const TopicOpts& o) {
  if (!o.new_partitions && o.configs.empty() && o.delete_configs.empty()) {
    return usage_error(cli, "topic alter needs --partitions, --config or --delete-config");
  }
  auto cfg = parse_kvs(o.configs);
  if (!cfg.ok()) return usage_error(cli, cfg.status().message());
  auto& c = cli.client();
  if (o.new_partitions) {
    Status st = c.create_partitions(o.name, *o.new_partitions);
    if (!st.ok()) return fail(cli, st);
  }
  std::vector<client::ConfigChange> changes;
  for (const auto& [k, v] : *cfg) changes.push_back({k, client::ConfigOp::set, v});
  for (const auto& k : o.delete_configs) changes.push_back({k, client::ConfigOp::remove, {}});
  if (!changes.empty()) {
    Status st = c.alter_configs(client::ResourceType::topic, o.name, changes);
    if (!st.ok()) return fail(cli, st);
  }
  if (cli.json_out()) {
    json set = json::object();
    for (const auto& [k, v] : *cfg) set[k] = v;
    print_json({{"topic", o.name},
                {"partitions", o.new_partitions ? json(*o.new_partitions) : json(nullptr)},
                {"set", set},
                {"deleted", o.delete_configs}});
  } else {
    std::cout << "altered topic " << o.name << "\n";
  }
  return kExitOk;
}

int do_delete(Cli& cli, const TopicOpts& o) {
  Status st = cli.client().delete_topic(o.name);
  if (!st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    print_json({{"topic", o.name}, {"deleted", true}});
  } else {
    std::cout << "deleted topic " << o.name << "\n";
  }
  return kExitOk;
}

}  // namespace

void register_topic(CLI::App& app, Cli& cli) {
  auto* topic = app.add_subcommand("topic", "Log topics");
  topic->require_subcommand(1);
  {
    auto o = std::make_shared<TopicOpts>();
    auto* s = topic->add_subcommand("create", "Create a topic");
    s->add_option("name", o->name)->required();
    s->add_option("--partitions,-p", o->partitions)
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    s->add_option("--replication-factor,-r", o->replication_factor)->capture_default_str();
    s->add_option("--config,-c", o->configs, "Topic config KEY=VALUE (repeatable)");
    on_run(s, cli, o, do_create);
  }
  {
    auto o = std::make_shared<TopicOpts>();
    auto* s = topic->add_subcommand("list", "List topics");
    s->add_flag("--include-internal", o->include_internal, "Also list internal topics");
    on_run(s, cli, o, do_list);
  }
  {
    auto o = std::make_shared<TopicOpts>();
    auto* s = topic->add_subcommand("describe", "Partitions, leaders, offsets and configs");
    s->add_option("name", o->name)->required();
    on_run(s, cli, o, do_describe);
  }
  {
    auto o = std::make_shared<TopicOpts>();
    auto* s = topic->add_subcommand("alter", "Add partitions and/or change configs");
    s->add_option("name", o->name)->required();
    s->add_option("--partitions,-p", o->new_partitions, "New total partition count");
    s->add_option("--config,-c", o->configs, "Set KEY=VALUE (repeatable)");
    s->add_option("--delete-config", o->delete_configs, "Remove KEY (repeatable)");
    on_run(s, cli, o, do_alter);
  }
  {
    auto o = std::make_shared<TopicOpts>();
    auto* s = topic->add_subcommand("delete", "Delete a topic");
    s->add_option("name", o->name)->required();
    on_run(s, cli, o, do_delete);
  }
}

}  // namespace strata::cli
