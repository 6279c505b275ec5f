#include "broker/security/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <sstream>
#include <vector>

#include "broker/config/security_config.h"
#include "broker/security/ssl_principal.h"

namespace strata::broker::security {

namespace ssl = boost::asio::ssl;
using Ctx = std::shared_ptr<ssl::context>;

namespace {

std::vector<std::string> split(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(' ');
    size_t e = item.find_last_not_of(' ');
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
  }
  return out;
}

int proto_version(const std::string& name) {
  return name == "TLSv1.3" ? TLS1_3_VERSION : TLS1_2_VERSION;
}

}  // namespace

Result<Ctx> make_server_tls_context(const TlsKeySource& keys) {
  auto key = [&](const char* k) { return keys.value(k); };
  auto name = [&](const char* k) { return keys.name ? keys.name(k) : std::string(k); };
  auto fail = [&](const std::string& why) {
    return Result<Ctx>(Errc::invalid_argument, keys.who + ": " + why);
  };
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                       ssl::context::single_dh_use,
                   ec);
  // Versions: the lowest and highest enabled (the key's check allows only TLSv1.2 / TLSv1.3).
  int lo = TLS1_3_VERSION, hi = TLS1_2_VERSION;
  for (const auto& p : split(key("ssl.enabled.protocols"))) {
    lo = std::min(lo, proto_version(p));
    hi = std::max(hi, proto_version(p));
  }
  SSL_CTX_set_min_proto_version(ctx->native_handle(), lo);
  SSL_CTX_set_max_proto_version(ctx->native_handle(), hi);

  // The key's passphrase, when it is encrypted.
  std::string pass = key("ssl.key.password");
  if (pass.empty()) pass = key("ssl.keystore.password");
  ctx->set_password_callback([pass](size_t, ssl::context::password_purpose) { return pass; });

  const std::string key_pem = key("ssl.keystore.key");
  const std::string chain_pem = key("ssl.keystore.certificate.chain");
  const std::string location = key("ssl.keystore.location");
  if (!key_pem.empty() || !chain_pem.empty()) {
    if (key_pem.empty() || chain_pem.empty()) {
      return fail(name("ssl.keystore.key") + " and " + name("ssl.keystore.certificate.chain") +
                  " go together");
    }
    ctx->use_certificate_chain(boost::asio::buffer(chain_pem), ec);
    if (ec) return fail(name("ssl.keystore.certificate.chain") + ": " + ec.message());
    ctx->use_private_key(boost::asio::buffer(key_pem), ssl::context::pem, ec);
    if (ec) return fail(name("ssl.keystore.key") + ": " + ec.message());
  } else if (!location.empty()) {
    ctx->use_certificate_chain_file(location, ec);
    if (ec) return fail(name("ssl.keystore.location") + " " + location + ": " + ec.message());
    ctx->use_private_key_file(location, ssl::context::pem, ec);
    if (ec) {
      return fail(name("ssl.keystore.location") + " " + location +
                  ": no usable private key: " + ec.message());
    }
  } else {
    return fail("TLS needs " + name("ssl.keystore.location") + " (or " + name("ssl.keystore.key") +
                " and " + name("ssl.keystore.certificate.chain") + ")");
  }
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return fail("the private key does not match the certificate");
  }

  const std::string trust_location = key("ssl.truststore.location");
  const std::string trust_pem = key("ssl.truststore.certificates");
  const bool have_trust = !trust_location.empty() || !trust_pem.empty();
  if (!trust_location.empty()) {
    ctx->load_verify_file(trust_location, ec);
    if (ec) {
      return fail(name("ssl.truststore.location") + " " + trust_location + ": " + ec.message());
    }
  }
  if (!trust_pem.empty()) {
    ctx->add_certificate_authority(boost::asio::buffer(trust_pem), ec);
    if (ec) return fail(name("ssl.truststore.certificates") + ": " + ec.message());
  }
  const std::string client_auth = key("ssl.client.auth");
  if (client_auth != "none" && !have_trust) {
    return fail(name("ssl.client.auth") + "=" + client_auth + " needs " +
                name("ssl.truststore.location") + " or " + name("ssl.truststore.certificates"));
  }
  if (client_auth == "required") {
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  } else if (client_auth == "requested") {
    ctx->set_verify_mode(ssl::verify_peer);
  } else {
    ctx->set_verify_mode(ssl::verify_none);
  }
  // Session resumption with client certificates needs a context id.
  static const unsigned char kSessionId[] = "strata";
  SSL_CTX_set_session_id_context(ctx->native_handle(), kSessionId, sizeof(kSessionId) - 1);

  // Cipher suites, written as Java writes them (IANA names): TLS 1.3 suites go to
  // SSL_CTX_set_ciphersuites as they are, TLS 1.2 ones are translated to OpenSSL's names. A
  // version none of whose suites is listed keeps OpenSSL's defaults.
  std::string tls12, tls13;
  for (const auto& s : split(key("ssl.cipher.suites"))) {
    const char* openssl_name = OPENSSL_cipher_name(s.c_str());
    const bool is13 = s.starts_with("TLS_AES_") || s.starts_with("TLS_CHACHA20_");
    if (is13) {
      tls13 += (tls13.empty() ? "" : ":") + s;
    } else if (openssl_name && std::string(openssl_name) != "(NONE)") {
      tls12 += (tls12.empty() ? "" : ":") + std::string(openssl_name);
    } else {
      return fail(name("ssl.cipher.suites") + ": unknown cipher suite " + s);
    }
  }
  if (!tls12.empty() && SSL_CTX_set_cipher_list(ctx->native_handle(), tls12.c_str()) != 1) {
    return fail(name("ssl.cipher.suites") + ": OpenSSL accepts none of " + tls12);
  }
  if (!tls13.empty() && SSL_CTX_set_ciphersuites(ctx->native_handle(), tls13.c_str()) != 1) {
    return fail(name("ssl.cipher.suites") + ": OpenSSL accepts none of " + tls13);
  }
  return ctx;
}

Result<Ctx> make_server_tls_context(const BrokerConfig& c, const std::string& listener) {
  return make_server_tls_context(TlsKeySource{
      "listener " + listener,
      [&c, &listener](const std::string& k) { return listener_value(c, listener, k); }, nullptr});
}

Result<Ctx> make_prefixed_tls_context(const BrokerConfig& c, const std::string& prefix,
                                      const std::string& who) {
  auto value = [&c, &prefix](const std::string& k) -> std::string {
    auto it = c.values.find(prefix + k);
    if (it != c.values.end()) return it->second;
    // Versions and suites are a policy of the whole broker, not of one endpoint.
    if (k == "ssl.enabled.protocols" || k == "ssl.cipher.suites") {
      it = c.values.find(k);
      if (it != c.values.end()) return it->second;
    }
    return "";
  };
  auto name = [&c, &prefix](const std::string& k) {
    return c.values.count(prefix + k) || (k != "ssl.enabled.protocols" && k != "ssl.cipher.suites")
               ? prefix + k
               : k;
  };
  return make_server_tls_context(TlsKeySource{who, value, name});
}

Result<Ctx> make_prefixed_client_tls_context(const BrokerConfig& c, const std::string& prefix,
                                             const std::string& who) {
  auto value = [&c, &prefix](const std::string& k) {
    auto it = c.values.find(prefix + k);
    return it != c.values.end() ? it->second : std::string();
  };
  auto fail = [&](const std::string& why) {
    return Result<Ctx>(Errc::invalid_argument, who + ": " + why);
  };
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression, ec);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  std::string pass = value("ssl.key.password");
  ctx->set_password_callback([pass](size_t, ssl::context::password_purpose) { return pass; });
  const std::string key_pem = value("ssl.keystore.key");
  const std::string chain_pem = value("ssl.keystore.certificate.chain");
  const std::string location = value("ssl.keystore.location");
  if (!key_pem.empty() && !chain_pem.empty()) {
    ctx->use_certificate_chain(boost::asio::buffer(chain_pem), ec);
    if (!ec) ctx->use_private_key(boost::asio::buffer(key_pem), ssl::context::pem, ec);
  } else if (!location.empty()) {
    ctx->use_certificate_chain_file(location, ec);
    if (!ec) ctx->use_private_key_file(location, ssl::context::pem, ec);
  }
  if (ec) return fail(prefix + "ssl.keystore: " + ec.message());
  const std::string trust_location = value("ssl.truststore.location");
  const std::string trust_pem = value("ssl.truststore.certificates");
  if (!trust_location.empty()) ctx->load_verify_file(trust_location, ec);
  if (!ec && !trust_pem.empty()) ctx->add_certificate_authority(boost::asio::buffer(trust_pem), ec);
  if (!ec && trust_location.empty() && trust_pem.empty()) ctx->set_default_verify_paths(ec);
  if (ec) return fail(prefix + "ssl.truststore: " + ec.message());
  ctx->set_verify_mode(ssl::verify_peer);
  return ctx;
}

Result<ListenerSecurity> listener_security(const BrokerConfig& c, const Listener& l) {
  ListenerSecurity s;
  s.name = l.name;
  s.protocol = l.protocol;
  if (!uses_tls(l.protocol)) return s;
  auto ctx = make_server_tls_context(c, l.name);
  if (!ctx.ok()) return ctx.status();
  s.tls = std::make_shared<TlsContextSlot>(*ctx);
  auto mapper = SslPrincipalMapper::parse(listener_value(c, l.name, "ssl.principal.mapping.rules"));
  if (!mapper.ok()) return mapper.status();
  s.principal_of_subject = [m = *mapper](const std::string& subject) -> Result<std::string> {
    auto name = m.map(subject);
    if (!name.ok()) return name.status();
    return "User:" + *name;
  };
  return s;
}

}  // namespace strata::broker::security
