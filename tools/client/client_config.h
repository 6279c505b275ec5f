// Client properties as Kafka's tools read them (`--command-config FILE`: security.protocol,
// sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...) and librdkafka's spellings of
// the same (sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location,
// ssl.certificate.location, ssl.key.location), turned into the connection's ClientSecurity.
// Trust and key stores are PEM files (ssl.truststore.type / ssl.keystore.type PEM). Unknown keys
// are refused, so a typo does not silently connect without TLS.
#pragma once

#include <map>
#include <string>

#include "protocol/base/result.h"
#include "protocol/client/connection.h"

namespace strata::client {

// `key=value` lines; '#' and '!' start comments.
Result<std::map<std::string, std::string>> read_properties(const std::string& path);
Result<ClientSecurity> client_security(const std::map<std::string, std::string>& props);

}  // namespace strata::client
