// `strata cluster describe [--partitions]`: cluster id, controller and brokers (DescribeCluster)
// and the partition health of every topic (Metadata for all topics), both from the bootstrap
// broker. Unhealthy partitions are a finding, not an error: the exit code is non-zero only when
// the broker cannot be asked.
// `strata cluster reassign --topic T --partition P --replicas 1,2,3 [--throttle BYTES_PER_S]`,
// `... --cancel` and `strata cluster reassign --list` (AlterPartitionReassignments /
// ListPartitionReassignments); `--throttle` first sets leader.replication.throttled.rate and
// follower.replication.throttled.rate on every broker (IncrementalAlterConfigs), as Kafka's
// reassignment tool does. `strata cluster elect [--topic T --partition P]`: preferred-leader
// election (ElectLeaders) of one partition, or of every partition.
#include <iostream>
#include <sstream>

#include "tools/cli/cli_common.h"
#include "tools/cli/cluster_health.h"

namespace strata::cli {
namespace {

struct ClusterOpts {
  bool partitions = false;
};

struct ReassignOpts {
  std::string topic;
  int32_t partition = -1;
  std::vector<int32_t> replicas;
  int64_t throttle = -1;
  bool cancel = false;
  bool list = false;
};

struct ElectOpts {
  std::string topic;
  int32_t partition = -1;
};

std::string joined(const std::vector<int32_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(',');
    out.append(std::to_string(v[i]));
  }
  return out;
}

int do_list_reassignments(Cli& cli) {
  auto r = cli.client().list_reassignments();
  if (!r.ok()) return fail(cli, r.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& o : *r) {
      arr.push_back({{"topic", o.topic},
                     {"partition", o.partition},
                     {"replicas", o.replicas},
                     {"adding", o.adding},
                     {"removing", o.removing}});
    }
    print_json({{"reassignments", arr}});
    return kExitOk;
  }
  if (r->empty()) {
    std::cout << "No reassignment in progress.\n";
    return kExitOk;
  }
  TextTable t({"TOPIC", "PARTITION", "REPLICAS", "ADDING", "REMOVING"});
  for (const auto& o : *r) {
    t.add({o.topic, std::to_string(o.partition), joined(o.replicas), joined(o.adding),
           joined(o.removing)});
  }
  t.print();
  return kExitOk;
}

int do_reassign(Cli& cli, const ReassignOpts& o) {
  if (o.list) return do_list_reassignments(cli);
  if (o.topic.empty() || o.partition < 0) {
    return usage_error(cli, "reassign needs --topic and --partition (or --list)");
  }
  if (o.cancel == !o.replicas.empty()) {
    return usage_error(cli, "reassign needs either --replicas or --cancel");
  }
  auto& c = cli.client();
  if (o.throttle >= 0) {
    auto cl = c.describe_cluster();
    if (!cl.ok()) return fail(cli, cl.status());
    const std::string rate = std::to_string(o.throttle);
    for (const auto& b : cl->brokers) {
      Status st =
          c.alter_configs(client::ResourceType::broker, std::to_string(b.node_id),
                          {{"leader.replication.throttled.rate", client::ConfigOp::set, rate},
                           {"follower.replication.throttled.rate", client::ConfigOp::set, rate}});
      if (!st.ok()) return fail(cli, st);
    }
  }
  std::optional<std::vector<int32_t>> target;
  if (!o.cancel) target = o.replicas;
  Status st = c.reassign_partition(o.topic, o.partition, target);
  if (!st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    json j = {{"topic", o.topic},
              {"partition", o.partition},
              {"status", o.cancel ? "cancelled" : "started"}};
    if (!o.cancel) j["replicas"] = o.replicas;
    print_json(j);
  } else if (o.cancel) {
    std::cout << "Cancelled the reassignment of " << o.topic << "-" << o.partition << ".\n";
  } else {
    std::cout << "Reassigning " << o.topic << "-" << o.partition << " to [" << joined(o.replicas)
              << "]; `strata cluster reassign --list` shows it until it completes.\n";
  }
  return kExitOk;
}

int do_elect(Cli& cli, const ElectOpts& o) {
  if (o.topic.empty() != (o.partition < 0)) {
    return usage_error(cli, "elect takes --topic and --partition together (or neither)");
  }
  std::optional<std::map<std::string, std::vector<int32_t>>> which;
  if (!o.topic.empty())
    which = std::map<std::string, std::vector<int32_t>>{{o.topic, {o.partition}}};
  auto r = cli.client().elect_preferred_leaders(which);
  if (!r.ok()) return fail(cli, r.status());
  int rc = kExitOk;
  for (const auto& p : *r) {
    if (!p.error.empty() && p.error != "ELECTION_NOT_NEEDED") rc = kExitKafka;
  }
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& p : *r) {
      arr.push_back({{"topic", p.topic},
                     {"partition", p.partition},
                     {"error", p.error.empty() ? json(nullptr) : json(p.error)},
                     {"message", p.message}});
    }
    print_json({{"results", arr}});
    return rc;
  }
  if (r->empty()) {
    std::cout << "Every partition is led by its preferred replica.\n";
    return rc;
  }
  TextTable t({"TOPIC", "PARTITION", "RESULT"});
  for (const auto& p : *r) {
    t.add({p.topic, std::to_string(p.partition), p.error.empty() ? "elected" : p.error});
  }
  t.print();
  return rc;
}

int do_describe(Cli& cli, const ClusterOpts& o) {
  auto& c = cli.client();
  auto cl = c.describe_cluster();
  if (!cl.ok()) return fail(cli, cl.status());
  auto md = c.metadata(std::nullopt);
  if (!md.ok()) return fail(cli, md.status());
  const ClusterHealth h = compute_health(*md);
  if (cli.json_out()) {
    print_json(cluster_json(*cl, h));
  } else {
    print_cluster_text(std::cout, *cl, h, o.partitions);
  }
  return kExitOk;
}

}  // namespace

void register_cluster(CLI::App& app, Cli& cli) {
  auto* cluster = app.add_subcommand("cluster", "Cluster information");
  cluster->require_subcommand(1);
  auto o = std::make_shared<ClusterOpts>();
  auto* s = cluster->add_subcommand(
      "describe",
      "Cluster id, controller, brokers and partition health (under-replicated, offline)");
  s->add_flag("--partitions", o->partitions,
              "Always print the table of under-replicated / offline partitions (it is printed "
              "anyway when there are any)");
  on_run(s, cli, o, do_describe);

  auto ro = std::make_shared<ReassignOpts>();
  auto* r = cluster->add_subcommand(
      "reassign", "Move a partition to new replicas, cancel a move, or list the moves in progress");
  r->add_option("--topic", ro->topic, "Topic");
  r->add_option("--partition", ro->partition, "Partition index");
  r->add_option("--replicas", ro->replicas, "Target broker ids, preferred leader first (1,2,3)")
      ->delimiter(',');
  r->add_option("--throttle", ro->throttle,
                "Also set the replication throttle of every broker, bytes/s (-1 = unlimited)");
  r->add_flag("--cancel", ro->cancel, "Cancel the reassignment in progress");
  r->add_flag("--list", ro->list, "List the reassignments in progress");
  on_run(r, cli, ro, do_reassign);

  auto eo = std::make_shared<ElectOpts>();
  auto* e = cluster->add_subcommand(
      "elect", "Preferred-leader election: the first replica leads if alive and in sync");
  e->add_option("--topic", eo->topic, "Topic (default: every partition)");
  e->add_option("--partition", eo->partition, "Partition index");
  on_run(e, cli, eo, do_elect);
}

}  // namespace strata::cli
