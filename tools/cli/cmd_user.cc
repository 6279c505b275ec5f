// `strata user create|delete|list`: SCRAM users (AlterUserScramCredentials /
// DescribeUserScramCredentials). As Kafka's admin client does, the CLI runs PBKDF2 itself and sends
// only the salt and salted password: the password never reaches the broker.
#include <fstream>
#include <iostream>

#include "protocol/client/client_error.h"
#include "protocol/sasl/scram.h"
#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

using protocol::sasl::ScramMechanism;

struct UserOpts {
  std::vector<std::string> users;
  std::string mechanism = "SCRAM-SHA-512";
  int32_t iterations = 8192;
  std::optional<std::string> password;
  std::optional<std::string> password_file;
  bool all_mechanisms = false;
};

int8_t type_of(ScramMechanism m) { return m == ScramMechanism::sha256 ? 1 : 2; }

std::string mechanism_text(int8_t type) {
  if (type == 1) return "SCRAM-SHA-256";
  if (type == 2) return "SCRAM-SHA-512";
  return "UNKNOWN(" + std::to_string(type) + ")";
}

// The per-user answers as one Status (the first failure).
Status first_failure(const std::vector<client::ScramAlterResult>& results) {
  for (const auto& r : results) {
    if (r.error != 0) return client::kafka_status(r.error, "user '" + r.user + "'", r.message);
  }
  return Status::Ok();
}

int do_create(Cli& cli, UserOpts& o) {
  if (o.users.size() != 1) return usage_error(cli, "give exactly one user name");
  auto m = protocol::sasl::scram_mechanism(o.mechanism);
  if (!m) return usage_error(cli, "--mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512");
  if (o.password.has_value() == o.password_file.has_value()) {
    return usage_error(cli, "give exactly one of --password or --password-file");
  }
  std::string password;
  if (o.password) {
    password = *o.password;
  } else {
    std::ifstream in(*o.password_file);
    if (!in || !std::getline(in, password)) {
      return usage_error(cli, "cannot read a password from " + *o.password_file);
    }
  }
  if (password.empty()) return usage_error(cli, "the password is empty");
  // Kafka's range, checked here too so a typo is a usage error rather than a round trip.
  if (o.iterations < protocol::sasl::kScramMinIterations ||
      o.iterations > protocol::sasl::kScramMaxIterations) {
    return usage_error(cli, "--iterations must be in [4096, 16384]");
  }
  auto salt = protocol::sasl::scram_random_salt();
  if (!salt.ok()) return fail(cli, salt.status());
  auto salted = protocol::sasl::scram_salted_password(*m, password, *salt, o.iterations);
  if (!salted.ok()) return fail(cli, salted.status());
  client::ScramUpsert up{o.users[0], type_of(*m), o.iterations, *salt, *salted};
  auto results = cli.client().alter_scram_credentials({}, {up});
  if (!results.ok()) return fail(cli, results.status());
  if (Status st = first_failure(*results); !st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    print_json({{"user", o.users[0]},
                {"mechanism", o.mechanism},
                {"iterations", o.iterations},
                {"status", "created"}});
  } else {
    std::cout << "user " << o.users[0] << ": " << o.mechanism << " credential set (" << o.iterations
              << " iterations)\n";
  }
  return kExitOk;
}

int do_delete(Cli& cli, UserOpts& o) {
  if (o.users.size() != 1) return usage_error(cli, "give exactly one user name");
  std::vector<int8_t> mechanisms;
  if (o.all_mechanisms) {  // whatever the broker holds for the user
    auto found = cli.client().describe_scram_users({o.users[0]});
    if (!found.ok()) return fail(cli, found.status());
    for (const auto& u : *found) {
      for (const auto& c : u.credentials) mechanisms.push_back(c.mechanism);
    }
  } else {
    auto m = protocol::sasl::scram_mechanism(o.mechanism);
    if (!m) return usage_error(cli, "--mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512");
    mechanisms.push_back(type_of(*m));
  }
  json deleted = json::array();
  for (int8_t mech : mechanisms) {  // one request each: Kafka refuses a user named twice
    auto results = cli.client().alter_scram_credentials({{o.users[0], mech}}, {});
    if (!results.ok()) return fail(cli, results.status());
    if (Status st = first_failure(*results); !st.ok()) return fail(cli, st);
    deleted.push_back(mechanism_text(mech));
  }
  if (cli.json_out()) {
    print_json({{"user", o.users[0]}, {"deleted", deleted}});
  } else {
    std::cout << "user " << o.users[0] << ": deleted " << deleted.size() << " credential(s)\n";
  }
  return kExitOk;
}

int do_list(Cli& cli, UserOpts& o) {
  auto found = cli.client().describe_scram_users(o.users);
  if (!found.ok()) return fail(cli, found.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& u : *found) {
      json creds = json::array();
      for (const auto& c : u.credentials) {
        creds.push_back({{"mechanism", mechanism_text(c.mechanism)}, {"iterations", c.iterations}});
      }
      arr.push_back({{"user", u.user}, {"credentials", creds}});
    }
    print_json({{"users", arr}});
    return kExitOk;
  }
  TextTable tt({"USER", "MECHANISM", "ITERATIONS"});
  for (const auto& u : *found) {
    for (const auto& c : u.credentials) {
      tt.add({u.user, mechanism_text(c.mechanism), std::to_string(c.iterations)});
    }
  }
  tt.print();
  return kExitOk;
}

}  // namespace

void register_user(CLI::App& app, Cli& cli) {
  auto* user = app.add_subcommand("user", "SCRAM users (credentials for SASL/SCRAM)");
  user->require_subcommand(1);
  {
    auto o = std::make_shared<UserOpts>();
    auto* s = user->add_subcommand("create", "Create a user or set its password (one mechanism)");
    s->add_option("name", o->users, "The user name")->required();
    s->add_option("--mechanism", o->mechanism, "SCRAM-SHA-256 or SCRAM-SHA-512 (default)");
    s->add_option("--iterations", o->iterations, "PBKDF2 iterations, 4096..16384 (default 8192)");
    s->add_option("--password", o->password,
                  "The password (visible to other local users: "
                  "prefer --password-file)");
    s->add_option("--password-file", o->password_file, "A file whose first line is the password");
    on_run(s, cli, o, do_create);
  }
  {
    auto o = std::make_shared<UserOpts>();
    auto* s = user->add_subcommand("delete", "Delete a user's credential (one mechanism, or all)");
    s->add_option("name", o->users, "The user name")->required();
    s->add_option("--mechanism", o->mechanism, "SCRAM-SHA-256 or SCRAM-SHA-512 (default)");
    s->add_flag("--all-mechanisms", o->all_mechanisms, "Every credential the user has");
    on_run(s, cli, o, do_delete);
  }
  {
    auto o = std::make_shared<UserOpts>();
    auto* s = user->add_subcommand("list", "SCRAM users and their mechanisms (never keys)");
    s->add_option("names", o->users, "Only these users (default: all)");
    on_run(s, cli, o, do_list);
  }
}

}  // namespace strata::cli
