// The subset of JAAS configuration text Kafka brokers are configured with
// (`sasl.jaas.config`, `listener.name.<l>.<mechanism>.sasl.jaas.config`):
//
//   org.apache.kafka.common.security.plain.PlainLoginModule required
//       username="admin" password="admin-secret" user_alice="alice-secret";
//
// one login module with its control flag and `key="value"` options, ending in ';'. Values are
// double-quoted (backslash escapes the next character) or bare words. For PLAIN, `user_<name>`
// options are the users the broker accepts; `username`/`password` are what the broker itself
// sends when it is the client (inter-broker connections). Value type; no I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/base/result.h"

namespace strata::protocol::sasl {

struct JaasConfig {
  std::string login_module;  // e.g. org.apache.kafka.common.security.plain.PlainLoginModule
  std::string flag;          // required | requisite | sufficient | optional
  std::map<std::string, std::string> options;

  // PLAIN users: the `user_<name>` options.
  std::optional<std::string> plain_password(const std::string& user) const;
  std::string option(const std::string& key) const;  // "" when absent
};

Result<JaasConfig> parse_jaas(std::string_view text);

}  // namespace strata::protocol::sasl
