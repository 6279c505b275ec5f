// Shared pieces of the `strata` admin CLI (tools/cli/): global options, output
// (aligned text tables or JSON), one-line error reporting, exit codes and small parsers.
// Each command file registers its subcommands with register_<area>(); a subcommand's callback
// stores the action in Cli::action, which main() runs after parsing.
// Owned by the CLI. Single-threaded (the CLI's main thread).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "tools/client/client.h"

namespace strata::cli {

// Documented exit codes (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitKafka = 1;       // the broker answered with a Kafka error
inline constexpr int kExitUsage = 2;       // bad command line
inline constexpr int kExitConnection = 3;  // could not reach / talk to the broker

using json = nlohmann::ordered_json;

struct Cli {
  std::string bootstrap = "127.0.0.1:9092";
  std::string output = "text";  // text | json
  int timeout_ms = 30000;
  std::string command_config;       // --command-config: client properties (TLS, SASL)
  std::function<int()> action;      // set by the chosen subcommand
  client::ClientSecurity security;  // from --command-config, read before the action runs

  bool json_out() const { return output == "json"; }
  // The client, created on first use from the global options.
  client::Client& client();

 private:
  std::unique_ptr<client::Client> client_;
};

// Binds a subcommand to its action: CLI11 parses into `*o`, then main runs f(cli, *o).
template <typename Opts, typename F>
void on_run(CLI::App* sub, Cli& cli, std::shared_ptr<Opts> o, F f) {
  sub->callback([&cli, o, f] { cli.action = [&cli, o, f] { return f(cli, *o); }; });
}

// Prints `s` as one line on stderr ("strata: UNKNOWN_TOPIC_OR_PARTITION: ...") and, in JSON mode,
// {"error": {"name": ..., "message": ...}} on stdout; returns the exit code (1 or 3).
int fail(Cli& cli, const Status& s);
// A usage error found after parsing (exit 2).
int usage_error(Cli& cli, const std::string& message);
// Prints a JSON document (one line) on stdout.
void print_json(const json& j);

// An aligned text table: header row, then rows; columns separated by two spaces.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& os = std::cout) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// True when stderr is a terminal (progress display only then).
bool stderr_is_tty();
// A progress line on stderr ("\r..."); no-op unless stderr is a TTY. done(n) shows the final
// count and ends the line (only when a progress line was shown).
class Progress {
 public:
  explicit Progress(std::string what) : what_(std::move(what)), on_(stderr_is_tty()) {}
  void update(int64_t n);
  void done(int64_t n);

 private:
  std::string what_;
  bool on_;
  int64_t last_ms_ = 0;
  bool shown_ = false;
};

// "k=v" -> (k, v); Errc::invalid_argument without '='.
Result<std::pair<std::string, std::string>> split_kv(const std::string& s);
// Parses a list of k=v strings into a map (later keys win).
Result<std::map<std::string, std::string>> parse_kvs(const std::vector<std::string>& items);
// ISO-8601 date-time ("2024-01-02T03:04:05[.mmm][Z|+hh:mm]", or a date alone = midnight UTC)
// -> epoch milliseconds.
Result<int64_t> parse_iso8601_ms(const std::string& s);
// Text of optional bytes for tables ("(null)" when absent).
std::string show(const std::optional<std::string>& s);
// JSON value of optional bytes: null or the string (invalid UTF-8 is replaced when dumped).
json jbytes(const std::optional<std::string>& s);

// Command registration (one per file).
void register_table(CLI::App& app, Cli& cli);
void register_topic(CLI::App& app, Cli& cli);
void register_group(CLI::App& app, Cli& cli);
void register_config(CLI::App& app, Cli& cli);
void register_cluster(CLI::App& app, Cli& cli);  // cmd_cluster.cc
void register_quota(CLI::App& app, Cli& cli);
void register_user(CLI::App& app, Cli& cli);
void register_records(CLI::App& app, Cli& cli);
void register_acl(CLI::App& app, Cli& cli);     // cmd_acl.cc
void register_txn(CLI::App& app, Cli& cli);     // cmd_txn.cc
void register_schema(CLI::App& app, Cli& cli);  // cmd_schema.cc (HTTP, not Kafka)

}  // namespace strata::cli
