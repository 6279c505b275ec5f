// strata-broker: the broker executable. `--config FILE` (server.properties format) and repeatable
// `--override key=value`. Exits non-zero with a message naming the key on a bad configuration.
// `--enable-test-faults` permits the test-only `test.` keys (refused otherwise, so a production
// config can never turn fault injection on by accident).
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "broker/broker.h"
#include "broker/config/config.h"

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

  strata::broker::Broker broker(std::move(config.value()));
  auto st = broker.start();
  if (!st.ok()) {
    spdlog::critical("start-up failed: {}", st.to_string());
    return 1;
  }
  broker.run();
  return 0;
}
