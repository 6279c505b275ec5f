// See registry_access.h.
#include "broker/schema/registry_access.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "broker/schema/registry_http.h"
#include "broker/security/acl_text.h"
#include "broker/security/authorize.h"
#include "broker/security/security_services.h"

namespace strata::broker::schema {

using nlohmann::json;
using security::AclOperation;
using security::ResourceType;

namespace {

// What a request needs before it is served, and what its answer must leave out.
struct Need {
  enum Kind { nothing, resource, schema_id } kind = nothing;
  AclOperation op = AclOperation::describe;
  ResourceType type = ResourceType::topic;
  std::string name;                  // the resource; for schema_id, the id as sent
  std::string subject;               // what the request names (for a denial's message)
  bool or_describe_configs = false;  // DESCRIBE_CONFIGS does as well as `op`
  enum Filter { none, subject_names, subject_versions } filter = none;
};

Need on_topic(AclOperation op, const std::string& subject) {
  return {Need::resource, op, ResourceType::topic, subject_topic(subject), subject, Need::none};
}

Need need_of(const HttpRequest& req, const std::vector<std::string>& seg) {
  const std::string& root = seg[0];
  const std::string& m = req.method;
  if (root == "subjects") {
    if (seg.size() == 1) {
      Need n;
      n.filter = Need::subject_names;
      return n;
    }
    const std::string& subject = seg[1];
    if (m == "DELETE") return on_topic(AclOperation::del, subject);
    if (m == "POST" && seg.size() == 3) return on_topic(AclOperation::write, subject);  // register
    return on_topic(AclOperation::describe, subject);  // reads and lookups (POST /subjects/{s})
  }
  if (root == "schemas") {
    if (seg.size() < 3 || seg[1] != "ids") return {};  // /schemas/types, or a 404
    Need n;
    n.kind = Need::schema_id;
    n.name = seg[2];
    if (seg.size() == 4 && seg[3] == "subjects") n.filter = Need::subject_names;
    if (seg.size() == 4 && seg[3] == "versions") n.filter = Need::subject_versions;
    return n;
  }
  if (root == "config" || root == "mode") {
    const bool read = m == "GET" || m == "HEAD";
    if (seg.size() == 1) {
      if (read) return {};
      Need n;
      n.kind = Need::resource;
      n.op = AclOperation::alter_configs;
      n.type = ResourceType::cluster;
      n.name = security::kClusterName;
      return n;
    }
    // Reading a subject's level is part of reading the subject (KafkaJS's client does it before
    // registering) or of its config; changing it is a config change.
    Need n = on_topic(read ? AclOperation::describe : AclOperation::alter_configs, seg[1]);
    n.or_describe_configs = read;
    return n;
  }
  if (root == "compatibility" && seg.size() >= 3) return on_topic(AclOperation::describe, seg[2]);
  return {};
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class Guard {
 public:
  Guard(HttpHandler inner, const security::Authorizer& authorizer, std::string forward_key,
        std::string broker_principal)
      : inner_(std::move(inner)),
        authorizer_(authorizer),
        forward_key_(std::move(forward_key)),
        broker_principal_(std::move(broker_principal)) {}

  HttpResponse operator()(const HttpRequest& in) {
    auto seg = registry_path_segments(in.path);
    if (!seg || seg->empty()) return inner_(in);  // "/" or a 404
    // A request another broker forwarded is checked with its client's address (vouched for by
    // the forwarding key), as the first broker checked it.
    HttpRequest req = in;
    if (!in.header(kForwardedClientHeader).empty()) {
      if (auto host = vouched_client_host(forward_key_, in)) {
        req.peer = *host;
      } else if (audit_.admit("bad forwarding header", steady_ms()) >= 0) {
        spdlog::warn(
            "schema registry: a request from {} carries an {} header that does not verify "
            "(brokers with different inter-broker passwords, or a forgery): its own address is "
            "checked",
            in.peer, kForwardedClientHeader);
      }
    }
    const std::string principal = "User:" + (req.user.empty() ? "ANONYMOUS" : req.user);
    const Need n = need_of(req, *seg);
    if (n.kind == Need::resource && !allowed(principal, req, n.op, n.type, n.name) &&
        !(n.or_describe_configs &&
          allowed(principal, req, AclOperation::describe_configs, n.type, n.name))) {
      return denied(principal, req, n.op, n.type == ResourceType::cluster ? "Cluster" : "Subject",
                    n.type == ResourceType::cluster ? n.name : n.subject);
    }
    if (n.kind == Need::schema_id) {
      // The id's subjects, deleted ones included (a deserializer still meets their ids), asked
      // as this principal: in a cluster the writer may answer, checking the same credentials
      // against the same ACLs.
      HttpRequest q = in;
      q.method = "GET";
      q.path = "/schemas/ids/" + n.name + "/subjects";
      q.query = "deleted=true";
      q.body.clear();
      HttpResponse r = inner_(q);
      if (r.status == 404) return inner_(in);  // an unknown id: its own 404
      if (r.status != 200) return r;           // no answer to check against: that error
      json subjects = json::parse(r.body, nullptr, false);
      bool any = broker(principal);
      if (subjects.is_array()) {
        for (const auto& s : subjects) {
          any = any || (s.is_string() && allowed(principal, req, AclOperation::describe,
                                                 ResourceType::topic, subject_topic(s)));
        }
      }
      if (!any) return denied(principal, req, AclOperation::describe, "Schema id", n.name);
    }
    HttpResponse r = inner_(req);
    if (n.filter != Need::none && r.status == 200) filter(principal, req, n.filter, r);
    return r;
  }

 private:
  // DESCRIBE is also granted to the brokers' own principal (the inter-broker user): a
  // partition leader reads the schemas of the values it decodes.
  bool allowed(const std::string& principal, const HttpRequest& req, AclOperation op,
               ResourceType type, const std::string& name) const {
    return (op == AclOperation::describe && broker(principal)) ||
           authorizer_.authorize(principal, req.peer, op, type, name);
  }
  bool broker(const std::string& principal) const {
    return !broker_principal_.empty() && principal == broker_principal_;
  }

  // Leaves out the subjects the principal may not describe (as Metadata leaves out topics).
  void filter(const std::string& principal, const HttpRequest& req, Need::Filter f,
              HttpResponse& r) const {
    json in = json::parse(r.body, nullptr, false);
    if (!in.is_array()) return;
    json out = json::array();
    for (auto& e : in) {
      const json* s = f == Need::subject_names ? &e : (e.is_object() ? &e["subject"] : nullptr);
      if (s != nullptr && s->is_string() &&
          allowed(principal, req, AclOperation::describe, ResourceType::topic,
                  subject_topic(s->get<std::string>()))) {
        out.push_back(std::move(e));
      }
    }
    r.body = out.dump();
  }

  HttpResponse denied(const std::string& principal, const HttpRequest& req, AclOperation op,
                      const char* what, const std::string& name) {
    const int64_t suppressed =
        audit_.admit(principal + '\x1f' + security::name_of(op), steady_ms());
    if (suppressed >= 0) {
      spdlog::warn(
          "schema registry: authorization denied: principal={} host={} operation={} "
          "resource={}:{} request={} {}{}",
          principal, req.peer, security::name_of(op), what, name, req.method, req.path,
          suppressed > 0 ? fmt::format(" (+{} more denials of this principal and operation in "
                                       "the last second, not logged)",
                                       suppressed)
                         : std::string());
    }
    return registry_error_response(
        403, 40301,
        fmt::format("User is denied operation {} on {}: {}", security::name_of(op), what, name));
  }

  HttpHandler inner_;
  const security::Authorizer& authorizer_;
  const std::string forward_key_;
  const std::string broker_principal_;
  security::DenialAudit audit_;
};

}  // namespace

std::string subject_topic(const std::string& subject) {
  for (std::string_view suffix : {"-key", "-value"}) {
    if (subject.size() > suffix.size() &&
        subject.compare(subject.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return subject.substr(0, subject.size() - suffix.size());
    }
  }
  const size_t dash = subject.rfind('-');
  if (dash != std::string::npos && dash > 0) return subject.substr(0, dash);
  return subject;
}

namespace {

// HMAC-SHA256(key, what the header vouches for: the client's host and the request as sent).
std::string client_mac(const std::string& key, const std::string& host, const HttpRequest& req) {
  const std::string msg = host + '\n' + req.method + ' ' + req.path + '?' + req.query + '\n' +
                          req.header("authorization") + '\n' + req.body;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &n);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

}  // namespace

std::string forward_key(const std::string& inter_broker_password) {
  if (inter_broker_password.empty()) return {};
  HttpRequest none;
  return client_mac(inter_broker_password, "strata schema registry forwarding", none);
}

std::string vouch_for_client(const std::string& key, const HttpRequest& req) {
  if (key.empty() || req.peer.empty()) return {};  // no key, or the broker's own request
  return req.peer + ' ' + client_mac(key, req.peer, req);
}

std::optional<std::string> vouched_client_host(const std::string& key, const HttpRequest& req) {
  const std::string v = req.header(kForwardedClientHeader);
  const size_t sp = v.rfind(' ');
  if (key.empty() || sp == std::string::npos) return std::nullopt;
  const std::string host = v.substr(0, sp);
  const std::string expected = client_mac(key, host, req);
  const std::string got = v.substr(sp + 1);
  if (got.size() != expected.size() ||
      CRYPTO_memcmp(got.data(), expected.data(), got.size()) != 0) {
    return std::nullopt;
  }
  return host;
}

HttpHandler authorized_registry(HttpHandler inner, const security::Authorizer* authorizer,
                                std::string forward_key, std::string broker_principal) {
  if (authorizer == nullptr) return inner;
  auto guard = std::make_shared<Guard>(std::move(inner), *authorizer, std::move(forward_key),
                                       std::move(broker_principal));
  return [guard](const HttpRequest& req) { return (*guard)(req); };
}

}  // namespace strata::broker::schema
