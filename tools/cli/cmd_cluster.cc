// `strata cluster describe [--partitions]`: cluster id, controller and brokers (DescribeCluster)
// and the partition health of every topic (Metadata for all topics), both from the bootstrap
// broker. Unhealthy partitions are a finding, not an error: the exit code is non-zero only when
// the broker cannot be asked.
#include <iostream>

#include "tools/cli/cli_common.h"
#include "tools/cli/cluster_health.h"

namespace strata::cli {
namespace {

struct ClusterOpts {
  bool partitions = false;
};

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
}

}  // namespace strata::cli
