#include "broker/security/tls_reload.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "broker/config/security_config.h"
#include "broker/net/asio_ssl.h"
#include "broker/security/tls_context.h"

namespace strata::broker::security {
namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string subject_of(X509* cert) {
  if (!cert) return "";
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

// The certificate's subject alternative names as "type:value" strings, sorted.
std::set<std::string> sans_of(X509* cert) {
  std::set<std::string> out;
  if (!cert) return out;
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
    int type = 0;
    const ASN1_STRING* v = static_cast<const ASN1_STRING*>(GENERAL_NAME_get0_value(g, &type));
    if (!v) continue;
    out.insert(std::to_string(type) + ":" +
               std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(v)),
                           static_cast<size_t>(ASN1_STRING_length(v))));
  }
  GENERAL_NAMES_free(names);
  return out;
}

std::set<std::string> reloadable_listeners_in(const BrokerConfig& c) {
  std::set<std::string> out;
  for (const auto& [k, v] : c.values) {
    std::string l;
    if (is_reloadable_listener_key(k, &l)) out.insert(lower(l));
  }
  return out;
}

bool same_reloadable_values(const BrokerConfig& a, const BrokerConfig& b, const std::string& l) {
  for (const auto* c : {&a, &b}) {
    for (const auto& [k, v] : c->values) {
      std::string kl;
      if (!is_reloadable_listener_key(k, &kl) || lower(kl) != l) continue;
      auto ia = a.values.find(k), ib = b.values.find(k);
      if (ia == a.values.end() || ib == b.values.end() || ia->second != ib->second) return false;
    }
  }
  return true;
}

}  // namespace

void TlsReloader::add(const std::string& listener, std::shared_ptr<TlsContextSlot> slot) {
  slots_[lower(listener)] = {listener, std::move(slot)};
}

Result<TlsReloader::Plan> TlsReloader::prepare(const BrokerConfig& current,
                                               const BrokerConfig& next,
                                               const std::vector<std::string>& named_keys) const {
  std::set<std::string> wanted;
  for (const auto& k : named_keys) {
    std::string l;
    if (is_reloadable_listener_key(k, &l)) wanted.insert(lower(l));
  }
  std::set<std::string> candidates = reloadable_listeners_in(current);
  candidates.merge(reloadable_listeners_in(next));
  for (const auto& l : candidates) {
    if (!same_reloadable_values(current, next, l)) wanted.insert(l);
  }
  Plan plan;
  for (const auto& l : wanted) {
    auto it = slots_.find(l);
    if (it == slots_.end()) {
      return Status(Errc::invalid_argument, "listener.name." + l + ".ssl.*: " + l +
                                                " is not a TLS listener of this broker");
    }
    const auto& [name, slot] = it->second;
    auto ctx = make_server_tls_context(next, name);
    if (!ctx.ok()) return ctx.status();
    X509* old_cert = SSL_CTX_get0_certificate(slot->get()->native_handle());
    X509* new_cert = SSL_CTX_get0_certificate((*ctx)->native_handle());
    if (listener_value(next, name, "ssl.allow.dn.changes") != "true" &&
        subject_of(old_cert) != subject_of(new_cert)) {
      return Status(Errc::invalid_argument,
                    "listener " + name + ": the new certificate's subject " + subject_of(new_cert) +
                        " differs from " + subject_of(old_cert) + " (ssl.allow.dn.changes=false)");
    }
    if (listener_value(next, name, "ssl.allow.san.changes") != "true" &&
        sans_of(old_cert) != sans_of(new_cert)) {
      return Status(Errc::invalid_argument,
                    "listener " + name +
                        ": the new certificate's subject alternative names differ from the "
                        "current ones (ssl.allow.san.changes=false)");
    }
    plan.listeners.push_back(name);
    plan.swaps.emplace_back(slot, std::move(*ctx));
  }
  return plan;
}

void TlsReloader::commit(const Plan& plan) {
  for (const auto& [slot, ctx] : plan.swaps) slot->set(ctx);
  for (const auto& name : plan.listeners) {
    spdlog::info("listener {}: TLS key and trust stores reloaded", name);
  }
}

}  // namespace strata::broker::security
