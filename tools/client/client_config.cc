#include "tools/client/client_config.h"

#include <fstream>
#include <set>

#include "protocol/sasl/jaas.h"

namespace strata::client {

namespace {

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

Result<std::map<std::string, std::string>> read_properties(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(Errc::not_found, "cannot read " + path);
  std::map<std::string, std::string> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      return Status(Errc::invalid_argument,
                    path + ":" + std::to_string(n) + ": expected key=value");
    }
    out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

Result<ClientSecurity> client_security(const std::map<std::string, std::string>& props) {
  static const std::set<std::string> known = {"security.protocol",
                                              "sasl.mechanism",
                                              "sasl.mechanisms",
                                              "sasl.jaas.config",
                                              "sasl.username",
                                              "sasl.password",
                                              "ssl.truststore.location",
                                              "ssl.truststore.type",
                                              "ssl.ca.location",
                                              "ssl.keystore.location",
                                              "ssl.keystore.type",
                                              "ssl.certificate.location",
                                              "ssl.key.location",
                                              "ssl.endpoint.identification.algorithm",
                                              "client.id"};
  ClientSecurity s;
  for (const auto& [k, v] : props) {
    if (!known.count(k)) return Status(Errc::invalid_argument, "unknown client property " + k);
    if ((k == "ssl.truststore.type" || k == "ssl.keystore.type") && v != "PEM") {
      return Status(Errc::invalid_argument, k + "=" + v + ": only PEM files are supported");
    }
  }
  auto get = [&](const char* k) {
    auto it = props.find(k);
    return it == props.end() ? std::string() : it->second;
  };
  if (!get("security.protocol").empty()) s.protocol = get("security.protocol");
  if (s.protocol != "PLAINTEXT" && s.protocol != "SSL" && s.protocol != "SASL_PLAINTEXT" &&
      s.protocol != "SASL_SSL") {
    return Status(Errc::invalid_argument, "security.protocol=" + s.protocol +
                                              ": expected PLAINTEXT, SSL, SASL_PLAINTEXT or "
                                              "SASL_SSL");
  }
  std::string mech = get("sasl.mechanism");
  if (mech.empty()) mech = get("sasl.mechanisms");
  if (!mech.empty()) s.sasl_mechanism = mech;
  s.username = get("sasl.username");
  s.password = get("sasl.password");
  if (const std::string jaas = get("sasl.jaas.config"); !jaas.empty()) {
    auto j = protocol::sasl::parse_jaas(jaas);
    if (!j.ok()) return j.status();
    s.username = j->option("username");
    s.password = j->option("password");
  }
  s.ca_file = get("ssl.ca.location");
  if (s.ca_file.empty()) s.ca_file = get("ssl.truststore.location");
  s.cert_file = get("ssl.certificate.location");
  s.key_file = get("ssl.key.location");
  if (s.cert_file.empty()) s.cert_file = get("ssl.keystore.location");  // key + chain in one
  if (props.count("ssl.endpoint.identification.algorithm")) {
    const std::string a = get("ssl.endpoint.identification.algorithm");
    if (a != "https" && !a.empty() && a != "none") {
      return Status(Errc::invalid_argument,
                    "ssl.endpoint.identification.algorithm=" + a + ": expected https or empty");
    }
    s.verify_hostname = a == "https";
  }
  if (s.sasl() && s.username.empty()) {
    return Status(Errc::invalid_argument,
                  "security.protocol=" + s.protocol +
                      " needs a user: sasl.username/sasl.password or sasl.jaas.config");
  }
  return s;
}

}  // namespace strata::client
