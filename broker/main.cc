// strata-broker: the broker executable. `--config FILE` (server.properties format) and repeatable
// `--override key=value`. Exits non-zero with a message naming the key on a bad configuration.
// `--enable-test-faults` permits the test-only `test.` keys (refused otherwise, so a production
// config can never turn fault injection on by accident).
#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "broker/broker.h"
#include "broker/config/config.h"

namespace {

// Every partition holds descriptors for good (each segment's .log stays open for reads, the
// active one also its writer and two index files; a PK partition's RocksDB up to
// PkEnvironment's max_open_files_per_partition), and every connection one more. The usual soft
// limit of 1024 is far below what max.broker.partitions allows, so raise it to the hard limit at
// start (as Kafka's packaging asks operators to) and log both: EMFILE later is then a choice
// of the operator's hard limit, visible in the start-up log.
void raise_open_files_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    spdlog::warn("getrlimit(RLIMIT_NOFILE): {}", std::strerror(errno));
    return;
  }
  const rlim_t before = rl.rlim_cur;
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      spdlog::warn("setrlimit(RLIMIT_NOFILE, {}): {}", rl.rlim_max, std::strerror(errno));
      rl.rlim_cur = before;
    }
  }
  spdlog::info("open files limit: {} (soft limit was {}, hard limit {})", rl.rlim_cur, before,
               rl.rlim_max);
}

// libprotobuf writes its complaints to stderr: a client's undecodable Protobuf value (the
// registry and typed tables parse them) would print lines no operator asked for. The broker
// already answers such values with an error naming why; keep the library's words at debug.
void route_protobuf_logs() {
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
        if (level >= google::protobuf::LOGLEVEL_FATAL) {
          spdlog::critical("libprotobuf {}:{}: {}", file, line, message);
        } else {
          spdlog::debug("libprotobuf {}:{}: {}", file, line, message);
        }
      });
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Strata broker: Kafka wire protocol + primary-key tables"};
  std::string config_path;
  std::vector<std::string> overrides;
  bool print_config = false;
  app.add_option("--config", config_path, "server.properties file (defaults apply without one)");
  app.add_option("--override", overrides, "key=value, applied after the file (repeatable)")
      ->take_all();
  bool enable_test_faults = false;  // gates the test.* fault-injection keys
  app.add_flag("--enable-test-faults", enable_test_faults,
               "allow the test-only `test.` config keys (fault injection); never in production");
  app.add_flag("--print-default-config", print_config,
               "print every config key with its default and documentation, then exit");
  CLI11_PARSE(app, argc, argv);

  if (print_config) {
    // test.* keys are listed commented out: they only work with --enable-test-faults.
    std::cout << strata::broker::default_config_text();
    return 0;
  }

  auto config = strata::broker::load_config(config_path, overrides);
  if (!config.ok()) {
    std::cerr << "strata-broker: " << config.status().message() << "\n";
    return 2;
  }
  for (const auto& key : config->explicit_keys) {
    if (key.starts_with("test.") && !enable_test_faults) {
      std::cerr << "strata-broker: config " << key
                << " is a test-only fault setting; it needs --enable-test-faults\n";
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::from_str(config->log_level));
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %v");
  raise_open_files_limit();
  route_protobuf_logs();

  strata::broker::Broker broker(std::move(config.value()));
  auto st = broker.start();
  if (!st.ok()) {
    spdlog::critical("start-up failed: {}", st.to_string());
    return 1;
  }
  broker.run();
  return 0;
}
