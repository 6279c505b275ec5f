#include "broker/config/security_config.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "broker/security/ssl_principal.h"
#include "protocol/sasl/jaas.h"

namespace strata::broker {

namespace {

using C = BrokerConfig;

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::vector<std::string> split(const std::string& v, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, sep)) {
    item = trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

const std::vector<std::string>& supported_mechanisms() {
  static const std::vector<std::string> m = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};
  return m;
}

Status set_protocol_map(const std::string& v, C* c) {
  std::map<std::string, SecurityProtocol> map;
  for (const auto& item : split(v, ',')) {
    auto colon = item.find(':');
    if (colon == std::string::npos) {
      return Status(Errc::invalid_argument, "config listener.security.protocol.map: '" + item +
                                                "' is not LISTENER_NAME:SECURITY_PROTOCOL");
    }
    std::string name = trim(item.substr(0, colon));
    auto p = parse_security_protocol(trim(item.substr(colon + 1)));
    if (name.empty() || !p) {
      return Status(Errc::invalid_argument,
                    "config listener.security.protocol.map: '" + item +
                        "' needs a name and one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL");
    }
    if (!map.emplace(name, *p).second) {
      return Status(Errc::invalid_argument,
                    "config listener.security.protocol.map: listener " + name + " mapped twice");
    }
  }
  if (c) c->listener_protocol_map = std::move(map);
  return Status::Ok();
}

std::string check_rules(const std::string& v) {
  auto r = security::SslPrincipalMapper::parse(v);
  return r.ok() ? "" : r.status().message();
}

std::string check_jaas(const std::string& v) {
  if (trim(v).empty()) return "";
  auto r = protocol::sasl::parse_jaas(v);
  return r.ok() ? "" : r.status().message();
}

std::string check_ciphers(const std::string& v) {
  for (const auto& s : split(v, ',')) {
    for (char ch : s) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '-') {
        return "'" + s + "' is not a cipher suite name";
      }
    }
  }
  return "";
}

// The keys that listener.name.<listener>. may prefix (besides <mechanism>.sasl.jaas.config).
const std::vector<std::string>& per_listener_keys() {
  static const std::vector<std::string> k = {
      "ssl.keystore.type",
      "ssl.keystore.location",
      "ssl.keystore.password",
      "ssl.key.password",
      "ssl.keystore.key",
      "ssl.keystore.certificate.chain",
      "ssl.truststore.type",
      "ssl.truststore.location",
      "ssl.truststore.certificates",
      "ssl.client.auth",
      "ssl.enabled.protocols",
      "ssl.cipher.suites",
      "ssl.principal.mapping.rules",
      "ssl.allow.dn.changes",
      "ssl.allow.san.changes",
      "sasl.enabled.mechanisms",
      "connections.max.reauth.ms",
  };
  return k;
}

}  // namespace

std::optional<SecurityProtocol> parse_security_protocol(std::string_view name) {
  if (name == "PLAINTEXT") return SecurityProtocol::plaintext;
  if (name == "SSL") return SecurityProtocol::ssl;
  if (name == "SASL_PLAINTEXT") return SecurityProtocol::sasl_plaintext;
  if (name == "SASL_SSL") return SecurityProtocol::sasl_ssl;
  return std::nullopt;
}

const char* security_protocol_name(SecurityProtocol p) {
  switch (p) {
    case SecurityProtocol::plaintext:
      return "PLAINTEXT";
    case SecurityProtocol::ssl:
      return "SSL";
    case SecurityProtocol::sasl_plaintext:
      return "SASL_PLAINTEXT";
    case SecurityProtocol::sasl_ssl:
      return "SASL_SSL";
  }
  return "PLAINTEXT";
}

void add_security_keys(KeyTable<BrokerConfig>& t) {
  constexpr uint8_t kNone = kConfigNoFlags;
  constexpr auto kNoField = KeyTable<C>::kNoField;
  t.custom("listener.security.protocol.map", ConfigType::string,
           "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
           "LISTENER_NAME:SECURITY_PROTOCOL pairs: the protocol of each listener name used in "
           "listeners and advertised.listeners.",
           kNone, set_protocol_map);
  // TLS (every ssl.* key may also be set per listener: listener.name.<listener>.ssl.*).
  t.one_of("ssl.keystore.type", kNoField, "PEM", {"PEM"},
           "Format of the key store: PEM (a private key and its certificate chain).");
  t.string("ssl.keystore.location", kNoField, "",
           "PEM file holding this broker's private key and certificate chain (TLS listeners).");
  t.password("ssl.keystore.password", kNoField, "",
             "Passphrase of an encrypted private key when ssl.key.password is empty.");
  t.password("ssl.key.password", kNoField, "", "Passphrase of an encrypted private key.");
  t.password("ssl.keystore.key", kNoField, "",
             "The private key as PEM text (instead of ssl.keystore.location).");
  t.string("ssl.keystore.certificate.chain", kNoField, "",
           "The certificate chain as PEM text (with ssl.keystore.key).");
  t.one_of("ssl.truststore.type", kNoField, "PEM", {"PEM"},
           "Format of the trust store: PEM certificates.");
  t.string("ssl.truststore.location", kNoField, "",
           "PEM file of the CA certificates client certificates are verified against.");
  t.string("ssl.truststore.certificates", kNoField, "",
           "The trusted CA certificates as PEM text (instead of ssl.truststore.location).");
  t.one_of("ssl.client.auth", kNoField, "none", {"none", "requested", "required"},
           "Client certificates on TLS listeners: none, requested (verified when sent), required "
           "(mTLS; the principal is the certificate's subject).");
  t.list("ssl.enabled.protocols", kNoField, "TLSv1.2,TLSv1.3", {"TLSv1.2", "TLSv1.3"},
         "TLS versions a TLS listener accepts.");
  t.string("ssl.cipher.suites", kNoField, "",
           "Comma-separated cipher suites (IANA names, as Java's); empty = OpenSSL's defaults.",
           kNone, check_ciphers);
  t.string("ssl.principal.mapping.rules", kNoField, "DEFAULT",
           "Rules mapping a client certificate's subject (RFC 2253) to a user name: "
           "RULE:pattern/replacement/[LU] or DEFAULT (the whole subject), first match wins.",
           kNone, check_rules);
  t.boolean("ssl.allow.dn.changes", kNoField, "false",
            "Whether a certificate reload (AlterConfigs on listener.name.<l>.ssl.keystore.*) may "
            "change the certificate's subject.");
  t.boolean("ssl.allow.san.changes", kNoField, "false",
            "Whether a certificate reload may change the certificate's subject alternative names.");
  // SASL
  t.list("sasl.enabled.mechanisms", &C::sasl_enabled_mechanisms, "SCRAM-SHA-256,SCRAM-SHA-512",
         supported_mechanisms(), "SASL mechanisms SASL listeners accept.");
  t.string("sasl.jaas.config", kNoField, "",
           "JAAS login module of SASL listeners without a listener.name.<l>.<mechanism>."
           "sasl.jaas.config (PLAIN users: user_<name>=\"password\").",
           kConfigSensitive, check_jaas, ConfigType::password);
  t.integer("sasl.server.max.receive.size", &C::sasl_server_max_receive_size, "524288", 1,
            INT32_MAX, "Largest frame read from a connection before it has authenticated (bytes).");
  t.integer("connections.max.reauth.ms", &C::connections_max_reauth_ms, "0", int64_t{0}, INT64_MAX,
            "Longest SASL session before the client must re-authenticate (KIP-368); 0 = never.");
  t.integer("connection.failed.authentication.delay.ms",
            &C::connection_failed_authentication_delay_ms, "100", 0, INT32_MAX,
            "Delay of the answer to a failed authentication, after which the connection closes.");
  t.one_of("security.inter.broker.protocol", &C::security_inter_broker_protocol, "PLAINTEXT",
           {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"},
           "Security protocol brokers use between themselves when inter.broker.listener.name is "
           "empty.");
  t.string("inter.broker.listener.name", &C::inter_broker_listener_name, "",
           "Listener brokers use to reach each other; empty = the one of "
           "security.inter.broker.protocol.");
  t.one_of("sasl.mechanism.inter.broker.protocol", &C::sasl_mechanism_inter_broker_protocol,
           "SCRAM-SHA-512", supported_mechanisms(),
           "SASL mechanism brokers use between themselves on a SASL listener.");
}

namespace {

// The TLS keys of an HTTP endpoint, `prefix` + the listener ssl.* key of the same name and
// meaning (security/tls_context.h: make_prefixed_tls_context reads them).
void add_endpoint_tls_keys(KeyTable<BrokerConfig>& t, const std::string& prefix,
                           const std::string& who, const std::string& clients) {
  constexpr auto kNoField = KeyTable<C>::kNoField;
  std::string whose = who + "'s";
  whose[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(whose[0])));
  auto key = [&prefix](const char* k) { return prefix + k; };
  // KeyTable copies names and docs as it adds them.
  auto add = [&](const char* k, const std::string& doc, bool secret) {
    const std::string name = key(k);
    if (secret) {
      t.password(name.c_str(), kNoField, "", doc.c_str());
    } else {
      t.string(name.c_str(), kNoField, "", doc.c_str());
    }
  };
  add("ssl.keystore.location", "PEM file with " + who + "'s private key and certificate chain.",
      false);
  add("ssl.keystore.key", whose + " private key as PEM text (instead of the location).", true);
  add("ssl.keystore.certificate.chain",
      whose + " certificate chain as PEM text (with " + key("ssl.keystore.key") + ").", false);
  add("ssl.key.password", "Passphrase of " + who + "'s encrypted private key.", true);
  add("ssl.truststore.location",
      "PEM file of the CAs " + clients + " client certificates are verified against.", false);
  add("ssl.truststore.certificates",
      "The CAs for " + clients + " client certificates as PEM text (instead of the location).",
      false);
  const std::string client_auth = key("ssl.client.auth");
  const std::string doc =
      "Client certificates on " + who + ": none, requested (verified when sent), required.";
  t.one_of(client_auth.c_str(), kNoField, "none", {"none", "requested", "required"}, doc.c_str());
}

}  // namespace

void add_metrics_security_keys(KeyTable<BrokerConfig>& t) {
  constexpr uint8_t kNone = kConfigNoFlags;
  t.boolean("metrics.ssl.enabled", &C::metrics_ssl_enabled, "false",
            "Serve metrics.listener over HTTPS (TLS) with the metrics.ssl.* keys.");
  add_endpoint_tls_keys(t, "metrics.", "the metrics endpoint", "scrapers'");
  t.string("metrics.basic.auth.user", &C::metrics_basic_auth_user, "",
           "User a scrape must send with HTTP basic auth; empty (with an empty password) = no "
           "auth.",
           kConfigSensitive);
  t.password("metrics.basic.auth.password", &C::metrics_basic_auth_password, "",
             "Password of metrics.basic.auth.user.", kNone);
}

void add_registry_security_keys(KeyTable<BrokerConfig>& t) {
  add_endpoint_tls_keys(t, "schema.registry.", "the Schema Registry", "registry clients'");
  t.one_of("schema.registry.authentication.method", &C::schema_registry_authentication_method,
           "none", {"none", "basic"},
           "basic = every registry request carries HTTP basic auth of a SCRAM user of the broker "
           "(its principal User:<name>, checked against the ACLs of the subject's topic when an "
           "authorizer is set); none = every request is User:ANONYMOUS.");
}

Status check_metrics_security(const BrokerConfig& c) {
  const bool user = !c.metrics_basic_auth_user.empty();
  const bool password = !c.metrics_basic_auth_password.empty();
  if (user != password) {
    return Status(Errc::invalid_argument,
                  std::string("config ") +
                      (user ? "metrics.basic.auth.password: empty while metrics.basic.auth.user is "
                              "set"
                            : "metrics.basic.auth.user: empty while metrics.basic.auth.password "
                              "is set") +
                      " (set both for basic auth, or neither)");
  }
  if (c.metrics_basic_auth_user.find(':') != std::string::npos) {
    return Status(Errc::invalid_argument,
                  "config metrics.basic.auth.user: a basic-auth user cannot contain ':'");
  }
  return Status::Ok();
}

namespace {
// What Kafka reconfigures on a running listener: its key store and trust store.
constexpr std::string_view kReloadable[] = {
    "ssl.keystore.type",   "ssl.keystore.location",   "ssl.keystore.password",
    "ssl.key.password",    "ssl.keystore.key",        "ssl.keystore.certificate.chain",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.certificates",
};

// "listener.name.<l>.<suffix>" → (l, suffix); nullopt when `key` has another form.
std::optional<std::pair<std::string, std::string>> split_override(std::string_view key) {
  if (!is_listener_override(key)) return std::nullopt;
  std::string_view rest = key.substr(std::string_view("listener.name.").size());
  auto dot = rest.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  return std::make_pair(std::string(rest.substr(0, dot)), std::string(rest.substr(dot + 1)));
}
}  // namespace

Status check_listener_override(const std::string& key, const std::string& value) {
  auto parts = split_override(key);
  if (!parts) {
    return Status(Errc::invalid_argument,
                  "config " + key + ": expected listener.name.<listener>.<key>");
  }
  const std::string& suffix = parts->second;
  for (const auto& m : supported_mechanisms()) {
    if (suffix == lower(m) + ".sasl.jaas.config") {
      std::string why = check_jaas(value);
      if (!why.empty()) return Status(Errc::invalid_argument, "config " + key + ": " + why);
      return Status::Ok();
    }
  }
  const auto& keys = per_listener_keys();
  if (std::find(keys.begin(), keys.end(), suffix) == keys.end()) {
    return Status(Errc::invalid_argument,
                  "unknown config key '" + key + "' (" + suffix + " is not a per-listener key)");
  }
  const BrokerKeyDef* def = find_broker_key(suffix);
  if (!def) return Status(Errc::invalid_argument, "unknown config key '" + key + "'");
  Status st = def->check(value);
  if (!st.ok()) return Status(Errc::invalid_argument, key + ": " + st.message());
  return Status::Ok();
}

bool is_reloadable_listener_key(std::string_view key, std::string* listener) {
  auto parts = split_override(key);
  if (!parts) return false;
  for (auto r : kReloadable) {
    if (parts->second == r) {
      if (listener) *listener = parts->first;
      return true;
    }
  }
  return false;
}

const BrokerKeyDef* listener_override_def(std::string_view key) {
  auto parts = split_override(key);
  if (!parts) return nullptr;
  for (const auto& m : supported_mechanisms()) {
    if (parts->second == lower(m) + ".sasl.jaas.config") return find_broker_key("sasl.jaas.config");
  }
  const auto& keys = per_listener_keys();
  if (std::find(keys.begin(), keys.end(), parts->second) == keys.end()) return nullptr;
  return find_broker_key(parts->second);
}

std::string listener_value(const BrokerConfig& c, const std::string& listener,
                           const std::string& key) {
  auto it = c.values.find("listener.name." + lower(listener) + "." + key);
  if (it != c.values.end()) return it->second;
  it = c.values.find(key);
  return it == c.values.end() ? std::string() : it->second;
}

Status resolve_listener_protocols(BrokerConfig& c) {
  for (auto* list : {&c.listeners, &c.advertised_listeners}) {
    for (auto& l : *list) {
      auto it = c.listener_protocol_map.find(l.name);
      if (it == c.listener_protocol_map.end()) {
        return Status(Errc::invalid_argument,
                      "config listeners: listener " + l.name +
                          " has no security protocol: add it to listener.security.protocol.map");
      }
      l.protocol = it->second;
    }
  }
  const std::string& ib = c.inter_broker_listener_name;
  if (!ib.empty() && std::none_of(c.listeners.begin(), c.listeners.end(),
                                  [&](const Listener& l) { return l.name == ib; })) {
    return Status(Errc::invalid_argument,
                  "config inter.broker.listener.name: " + ib + " is not one of the listeners");
  }
  return Status::Ok();
}

std::string inter_broker_listener(const BrokerConfig& c) {
  if (!c.inter_broker_listener_name.empty()) return c.inter_broker_listener_name;
  auto p = parse_security_protocol(c.security_inter_broker_protocol);
  for (const auto& l : c.listeners) {
    if (p && l.protocol == *p) return l.name;
  }
  return c.listeners.front().name;
}

Result<client::ClientSecurity> inter_broker_client_security(const BrokerConfig& c) {
  const std::string name = inter_broker_listener(c);
  client::ClientSecurity s;
  SecurityProtocol protocol = SecurityProtocol::plaintext;
  for (const auto& l : c.listeners) {
    if (l.name == name) protocol = l.protocol;
  }
  s.protocol = security_protocol_name(protocol);
  if (uses_tls(protocol)) {
    s.ca_file = listener_value(c, name, "ssl.truststore.location");
    s.cert_file = listener_value(c, name, "ssl.keystore.location");
    if (s.ca_file.empty()) {
      return Status(Errc::invalid_argument,
                    "inter-broker listener " + name +
                        " uses TLS: brokers verify each other with ssl.truststore.location");
    }
  }
  if (uses_sasl(protocol)) {
    s.sasl_mechanism = c.sasl_mechanism_inter_broker_protocol;
    std::string jaas = listener_value(c, name, lower(s.sasl_mechanism) + ".sasl.jaas.config");
    if (jaas.empty()) jaas = listener_value(c, name, "sasl.jaas.config");
    auto j = protocol::sasl::parse_jaas(jaas);
    if (jaas.empty() || !j.ok() || j->option("username").empty()) {
      return Status(Errc::invalid_argument,
                    "inter-broker listener " + name + " uses SASL: its JAAS config for " +
                        s.sasl_mechanism + " needs username=\"...\" password=\"...\"");
    }
    s.username = j->option("username");
    s.password = j->option("password");
  }
  return s;
}

std::vector<std::string> listener_mechanisms(const BrokerConfig& c, const std::string& listener) {
  return split(listener_value(c, listener, "sasl.enabled.mechanisms"), ',');
}

}  // namespace strata::broker
