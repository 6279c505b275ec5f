// strata: the admin CLI of Strata. Global options, subcommand registration and
// exit codes (0 ok, 1 Kafka error, 2 usage, 3 connection); see docs/cli.md.
#include <csignal>
#include <cstdio>

#include "tools/cli/cli_common.h"
#include "tools/client/client_config.h"

int main(int argc, char** argv) {
  using namespace strata::cli;
  std::signal(SIGPIPE, SIG_IGN);
  Cli cli;
  CLI::App app{
      "strata: admin CLI for the Strata broker (topics, PK tables, groups, configs, quotas, ACLs, "
      "transactions, schemas)"};
  app.fallthrough();
  app.require_subcommand(1);
  app.add_option("--bootstrap-server,-b", cli.bootstrap, "Broker address HOST:PORT")
      ->capture_default_str();
  app.add_option("--output,-o", cli.output, "Output format")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--command-config", cli.command_config,
                 "Client properties file (security.protocol, sasl.mechanism, sasl.jaas.config, "
                 "ssl.truststore.location, ...), as Kafka's tools take it");
  app.add_option("--timeout-ms", cli.timeout_ms, "Request timeout in milliseconds")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();

  register_table(app, cli);
  register_topic(app, cli);
  register_group(app, cli);
  register_config(app, cli);
  register_cluster(app, cli);
  register_quota(app, cli);
  register_user(app, cli);
  register_records(app, cli);
  register_acl(app, cli);
  register_txn(app, cli);
  register_schema(app, cli);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (auto hp = strata::client::parse_host_port(cli.bootstrap); !hp.ok()) {
    return usage_error(cli, hp.status().message());
  }
  if (!cli.command_config.empty()) {
    auto props = strata::client::read_properties(cli.command_config);
    if (!props.ok()) return usage_error(cli, props.status().message());
    auto sec = strata::client::client_security(*props);
    if (!sec.ok()) return usage_error(cli, sec.status().message());
    cli.security = *sec;
  }
  if (!cli.action) {
    std::fprintf(stderr, "strata: usage: missing subcommand (see --help)\n");
    return kExitUsage;
  }
  return cli.action();
}
