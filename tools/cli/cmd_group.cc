// `strata group ...`: list, describe (state, members, assignments, committed offset, log end and
// lag per partition), reset-offsets (dry run unless --execute; Empty/Dead groups only), delete.
#include <chrono>
#include <iostream>
#include <limits>
#include <set>

#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

struct GroupOpts {
  std::string group;
  std::string topic;
  bool to_earliest = false;
  bool to_latest = false;
  std::optional<int64_t> to_offset;
  std::optional<std::string> to_datetime;
  std::optional<int64_t> shift_by;
  bool execute = false;
};

int do_list(Cli& cli, const GroupOpts&) {
  auto gs = cli.client().list_groups();
  if (!gs.ok()) return fail(cli, gs.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& g : *gs) {
      arr.push_back(
          {{"group_id", g.group_id}, {"protocol_type", g.protocol_type}, {"state", g.state}});
    }
    print_json({{"groups", arr}});
  } else {
    TextTable tt({"GROUP", "STATE", "PROTOCOL-TYPE"});
    for (const auto& g : *gs)
      tt.add({g.group_id, g.state.empty() ? "-" : g.state, g.protocol_type});
    tt.print();
  }
  return kExitOk;
}

int do_describe(Cli& cli, const GroupOpts& o) {
  auto& c = cli.client();
  auto g = c.describe_group(o.group);
  if (!g.ok()) return fail(cli, g.status());
  auto committed = c.committed_offsets(o.group);
  if (!committed.ok()) return fail(cli, committed.status());
  // Rows: every committed partition plus every assigned one.
  std::map<std::pair<std::string, int32_t>, std::string> owner;
  for (const auto& m : g->members) {
    for (const auto& tp : m.assignment) {
      for (int32_t p : tp.partitions) owner[{tp.topic, p}] = m.member_id;
    }
  }
  std::set<std::pair<std::string, int32_t>> keys;
  for (const auto& [tp, off] : *committed) keys.insert(tp);
  for (const auto& [tp, m] : owner) keys.insert(tp);
  std::set<std::string> topics;
  for (const auto& k : keys) topics.insert(k.first);
  std::map<std::pair<std::string, int32_t>, int64_t> log_end;
  for (const auto& t : topics) {
    auto ends = c.list_offsets(t, client::kLatest);
    if (!ends.ok()) return fail(cli, ends.status());
    for (const auto& e : *ends) log_end[{t, e.partition}] = e.offset;
  }
  json offsets = json::array();
  TextTable tt({"TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "MEMBER"});
  for (const auto& k : keys) {
    auto ci = committed->find(k);
    const int64_t com = ci == committed->end() ? -1 : ci->second;
    const int64_t end = log_end.count(k) ? log_end[k] : -1;
    const bool has_lag = com >= 0 && end >= 0;
    const int64_t lag = has_lag ? std::max<int64_t>(0, end - com) : -1;
    const std::string member = owner.count(k) ? owner[k] : "";
    offsets.push_back({{"topic", k.first},
                       {"partition", k.second},
                       {"committed_offset", com >= 0 ? json(com) : json(nullptr)},
                       {"log_end_offset", end},
                       {"lag", has_lag ? json(lag) : json(nullptr)},
                       {"member_id", member.empty() ? json(nullptr) : json(member)}});
    tt.add({k.first, std::to_string(k.second), com >= 0 ? std::to_string(com) : "-",
            std::to_string(end), has_lag ? std::to_string(lag) : "-",
            member.empty() ? "-" : member});
  }
  if (cli.json_out()) {
    json members = json::array();
    for (const auto& m : g->members) {
      json asg = json::array();
      for (const auto& tp : m.assignment) {
        asg.push_back({{"topic", tp.topic}, {"partitions", tp.partitions}});
      }
      members.push_back({{"member_id", m.member_id},
                         {"group_instance_id", jbytes(m.group_instance_id)},
                         {"client_id", m.client_id},
                         {"client_host", m.client_host},
                         {"assignment", asg}});
    }
    print_json({{"group_id", g->group_id},
                {"state", g->state},
                {"protocol_type", g->protocol_type},
                {"protocol", g->protocol},
                {"members", members},
                {"offsets", offsets}});
    return kExitOk;
  }
  std::cout << "group " << g->group_id << "  state " << g->state << "  protocol "
            << (g->protocol.empty() ? "-" : g->protocol) << "  members " << g->members.size()
            << "\n\n";
  if (!g->members.empty()) {
    TextTable mt({"MEMBER", "CLIENT-ID", "HOST", "ASSIGNMENT"});
    for (const auto& m : g->members) {
      std::string asg;
      for (const auto& tp : m.assignment) {
        asg += (asg.empty() ? "" : " ") + tp.topic + ":";
        for (size_t i = 0; i < tp.partitions.size(); ++i) {
          asg += (i ? "," : "") + std::to_string(tp.partitions[i]);
        }
      }
      mt.add({m.member_id, m.client_id, m.client_host, asg.empty() ? "-" : asg});
    }
    mt.print();
    std::cout << "\n";
  }
  tt.print();
  return kExitOk;
}

int do_reset(Cli& cli, const GroupOpts& o) {
  const int modes = int(o.to_earliest) + int(o.to_latest) + int(o.to_offset.has_value()) +
                    int(o.to_datetime.has_value()) + int(o.shift_by.has_value());
  if (modes != 1) {
    return usage_error(cli,
                       "give exactly one of --to-earliest, --to-latest, --to-offset, "
                       "--to-datetime, --shift-by");
  }
  std::optional<int64_t> ts;
  if (o.to_datetime) {
    auto t = parse_iso8601_ms(*o.to_datetime);
    if (!t.ok()) return usage_error(cli, t.status().message());
    ts = *t;
  }
  auto& c = cli.client();
  auto g = c.describe_group(o.group);
  if (!g.ok()) return fail(cli, g.status());
  if (g->state != "Empty" && g->state != "Dead") {
    return fail(cli, client::kafka_status(68, "group '" + o.group + "' is " + g->state,
                                          "reset offsets only of an inactive (Empty/Dead) group"));
  }
  auto committed = c.committed_offsets(o.group, o.topic);
  if (!committed.ok()) return fail(cli, committed.status());
  auto starts = c.list_offsets(o.topic, client::kEarliest);
  if (!starts.ok()) return fail(cli, starts.status());
  auto ends = c.list_offsets(o.topic, client::kLatest);
  if (!ends.ok()) return fail(cli, ends.status());
  std::map<int32_t, int64_t> by_ts;
  if (ts) {
    auto r = c.list_offsets(o.topic, *ts);
    if (!r.ok()) return fail(cli, r.status());
    for (const auto& p : *r) by_ts[p.partition] = p.offset;
  }
  client::CommittedOffsets target;
  json parts = json::array();
  TextTable tt({"TOPIC", "PARTITION", "CURRENT", "NEW"});
  for (size_t i = 0; i < starts->size(); ++i) {
    const int32_t p = (*starts)[i].partition;
    const int64_t lo = (*starts)[i].offset;
    int64_t hi = lo;
    for (const auto& e : *ends) {
      if (e.partition == p) hi = e.offset;
    }
    auto ci = committed->find({o.topic, p});
    const int64_t cur = ci == committed->end() ? -1 : ci->second;
    int64_t nv = 0;
    if (o.to_earliest) nv = lo;
    if (o.to_latest) nv = hi;
    if (o.to_offset) nv = *o.to_offset;
    if (ts) nv = by_ts.count(p) && by_ts[p] >= 0 ? by_ts[p] : hi;
    if (o.shift_by) {
      const int64_t base = cur >= 0 ? cur : lo;
      if (__builtin_add_overflow(base, *o.shift_by, &nv)) {  // saturate; clamped just below
        nv = *o.shift_by > 0 ? std::numeric_limits<int64_t>::max() : 0;
      }
    }
    nv = std::clamp(nv, lo, hi);
    target[{o.topic, p}] = nv;
    parts.push_back({{"topic", o.topic},
                     {"partition", p},
                     {"current_offset", cur >= 0 ? json(cur) : json(nullptr)},
                     {"new_offset", nv}});
    tt.add({o.topic, std::to_string(p), cur >= 0 ? std::to_string(cur) : "-", std::to_string(nv)});
  }
  if (o.execute) {
    Status st = c.commit_offsets(o.group, target);
    if (!st.ok()) return fail(cli, st);
  }
  if (cli.json_out()) {
    print_json({{"group_id", o.group},
                {"topic", o.topic},
                {"executed", o.execute},
                {"partitions", parts}});
  } else {
    tt.print();
    if (!o.execute) std::cout << "(dry run: add --execute to commit these offsets)\n";
  }
  return kExitOk;
}

int do_delete(Cli& cli, const GroupOpts& o) {
  Status st = cli.client().delete_group(o.group);
  if (!st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    print_json({{"group_id", o.group}, {"deleted", true}});
  } else {
    std::cout << "deleted group " << o.group << "\n";
  }
  return kExitOk;
}

}  // namespace

void register_group(CLI::App& app, Cli& cli) {
  auto* group = app.add_subcommand("group", "Consumer groups");
  group->require_subcommand(1);
  {
    auto o = std::make_shared<GroupOpts>();
    auto* s = group->add_subcommand("list", "List groups");
    on_run(s, cli, o, do_list);
  }
  {
    auto o = std::make_shared<GroupOpts>();
    auto* s = group->add_subcommand("describe", "State, members, offsets and lag");
    s->add_option("group", o->group)->required();
    on_run(s, cli, o, do_describe);
  }
  {
    auto o = std::make_shared<GroupOpts>();
    auto* s = group->add_subcommand("reset-offsets", "Move committed offsets (dry run by default)");
    s->add_option("group", o->group)->required();
    s->add_option("--topic,-t", o->topic)->required();
    s->add_flag("--to-earliest", o->to_earliest);
    s->add_flag("--to-latest", o->to_latest);
    s->add_option("--to-offset", o->to_offset);
    s->add_option("--to-datetime", o->to_datetime, "ISO-8601, e.g. 2024-05-01T12:00:00Z");
    s->add_option("--shift-by", o->shift_by);
    s->add_flag("--execute", o->execute, "Commit the new offsets (default: dry run)");
    on_run(s, cli, o, do_reset);
  }
  {
    auto o = std::make_shared<GroupOpts>();
    auto* s = group->add_subcommand("delete", "Delete an inactive group");
    s->add_option("group", o->group)->required();
    on_run(s, cli, o, do_delete);
  }
}

}  // namespace strata::cli
