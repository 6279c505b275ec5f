// `strata quota describe|alter`: client quotas by user, client id or both (DescribeClientQuotas /
// AlterClientQuotas; the keys producer_byte_rate, consumer_byte_rate, request_percentage).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

struct QuotaOpts {
  std::optional<std::string> user;
  bool user_default = false;
  std::optional<std::string> client_id;
  bool client_id_default = false;
  bool strict = false;
  bool validate_only = false;
  std::vector<std::string> add;  // k=v (comma-separated lists allowed)
  std::vector<std::string> del;  // k
};

std::vector<std::string> split_commas(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    size_t pos = 0;
    while (pos <= item.size()) {
      size_t comma = item.find(',', pos);
      std::string part = item.substr(pos, comma == std::string::npos ? item.npos : comma - pos);
      if (!part.empty()) out.push_back(part);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  return out;
}

// 5000 rather than 5000.000000; fractions kept.
std::string show_value(double v) {
  char buf[40];
  if (std::abs(v - std::round(v)) < 1e-9 && std::abs(v) < 9e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.10g", v);
  }
  return buf;
}

json value_json(double v) {
  if (std::abs(v - std::round(v)) < 1e-9 && std::abs(v) < 9e15) {
    return json(static_cast<int64_t>(std::llround(v)));
  }
  return json(v);
}

// "user=alice,client-id=x": the user part first, as Kafka names these entities.
std::string entity_text(const std::vector<client::QuotaEntityPart>& e) {
  std::string out;
  for (bool user_pass : {true, false}) {
    for (const auto& p : e) {
      if ((p.type == "user") != user_pass) continue;
      if (!out.empty()) out += ',';
      out += p.type + "=" + (p.name ? *p.name : "<default>");
    }
  }
  return out;
}

// At most one option of each pair; empty when fine, else the usage error.
std::string check_pairs(const QuotaOpts& o) {
  if (o.user && o.user_default) return "give at most one of --user NAME or --user-default";
  if (o.client_id && o.client_id_default) {
    return "give at most one of --client-id NAME or --client-id-default";
  }
  return "";
}

int do_describe(Cli& cli, QuotaOpts& o) {
  if (auto err = check_pairs(o); !err.empty()) return usage_error(cli, err);
  std::vector<client::QuotaFilter> filter;
  if (o.user) filter.push_back({"user", client::QuotaMatch::exact, *o.user});
  if (o.user_default) filter.push_back({"user", client::QuotaMatch::default_entity, std::nullopt});
  if (o.client_id) filter.push_back({"client-id", client::QuotaMatch::exact, *o.client_id});
  if (o.client_id_default) {
    filter.push_back({"client-id", client::QuotaMatch::default_entity, std::nullopt});
  }
  auto found = cli.client().describe_client_quotas(filter, o.strict);
  if (!found.ok()) return fail(cli, found.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& q : *found) {
      json entity = json::array();
      for (const auto& p : q.entity) entity.push_back({{"type", p.type}, {"name", jbytes(p.name)}});
      json values = json::object();
      for (const auto& [k, v] : q.values) values[k] = value_json(v);
      arr.push_back({{"entity", entity}, {"values", values}});
    }
    print_json(arr);
    return kExitOk;
  }
  TextTable tt({"ENTITY", "QUOTAS"});
  for (const auto& q : *found) {
    std::string values;
    for (const auto& [k, v] : q.values)
      values += (values.empty() ? "" : " ") + k + "=" + show_value(v);
    tt.add({entity_text(q.entity), values});
  }
  tt.print();
  return kExitOk;
}

int do_alter(Cli& cli, QuotaOpts& o) {
  if (auto err = check_pairs(o); !err.empty()) return usage_error(cli, err);
  const bool has_user = o.user || o.user_default;
  const bool has_client = o.client_id || o.client_id_default;
  if (!has_user && !has_client) {
    return usage_error(cli,
                       "give an entity: --user NAME | --user-default and/or --client-id NAME | "
                       "--client-id-default");
  }
  std::vector<client::QuotaOp> ops;
  json set = json::object(), deleted = json::array();
  for (const auto& item : split_commas(o.add)) {
    auto kv = split_kv(item);
    if (!kv.ok()) return usage_error(cli, kv.status().message());
    char* end = nullptr;
    const double v = std::strtod(kv->second.c_str(), &end);
    if (kv->second.empty() || end != kv->second.c_str() + kv->second.size()) {
      return usage_error(cli, "quota value of " + kv->first + " is not a number: " + kv->second);
    }
    ops.push_back({kv->first, v});
    set[kv->first] = value_json(v);
  }
  for (const auto& key : split_commas(o.del)) {
    ops.push_back({key, std::nullopt});
    deleted.push_back(key);
  }
  if (ops.empty()) return usage_error(cli, "give --add KEY=VALUE[,...] and/or --delete KEY[,...]");
  std::vector<client::QuotaEntityPart> entity;
  if (has_user) entity.push_back({"user", o.user});
  if (has_client) entity.push_back({"client-id", o.client_id});
  Status st = cli.client().alter_client_quotas(entity, ops, o.validate_only);
  if (!st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    json ej = json::array();
    for (const auto& p : entity) ej.push_back({{"type", p.type}, {"name", jbytes(p.name)}});
    print_json(
        {{"entity", ej}, {"set", set}, {"deleted", deleted}, {"validate_only", o.validate_only}});
  } else {
    std::cout << (o.validate_only ? "validated " : "altered ") << ops.size() << " quota(s) of "
              << entity_text(entity) << "\n";
  }
  return kExitOk;
}

void add_entity_options(CLI::App* s, const std::shared_ptr<QuotaOpts>& o) {
  s->add_option("--user", o->user,
                "The user entity (the principal's name: alice for User:alice; ANONYMOUS "
                "unauthenticated)");
  s->add_flag("--user-default", o->user_default,
              "The default user entity (applies to every user without its own)");
  s->add_option("--client-id", o->client_id, "The client id entity (with a user: user+client-id)");
  s->add_flag("--client-id-default", o->client_id_default,
              "The default client-id entity (applies to every client id without its own)");
}

}  // namespace

void register_quota(CLI::App& app, Cli& cli) {
  auto* quota = app.add_subcommand("quota", "Client quotas (by user, client id or both)");
  quota->require_subcommand(1);
  {
    auto o = std::make_shared<QuotaOpts>();
    auto* s = quota->add_subcommand("describe", "Show client quotas (all, or one entity)");
    add_entity_options(s, o);
    s->add_flag("--strict", o->strict, "Only entities with no other entity types");
    on_run(s, cli, o, do_describe);
  }
  {
    auto o = std::make_shared<QuotaOpts>();
    auto* s = quota->add_subcommand("alter", "Set (--add) or remove (--delete) client quotas");
    add_entity_options(s, o);
    s->add_option("--add", o->add, "KEY=VALUE[,KEY=VALUE...]");
    s->add_option("--delete", o->del, "KEY[,KEY...]");
    s->add_flag("--validate-only", o->validate_only, "Check only, change nothing");
    on_run(s, cli, o, do_alter);
  }
}

}  // namespace strata::cli
