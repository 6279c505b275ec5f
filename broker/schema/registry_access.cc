// See registry_access.h.
#include "broker/schema/registry_access.h"

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
  Guard(HttpHandler inner, const security::Authorizer& authorizer)
      : inner_(std::move(inner)), authorizer_(authorizer) {}

  HttpResponse operator()(const HttpRequest& req) {
    auto seg = registry_path_segments(req.path);
    if (!seg || seg->empty()) return inner_(req);  // "/" or a 404
    const std::string principal = "User:" + (req.user.empty() ? "ANONYMOUS" : req.user);
    const Need n = need_of(req, *seg);
    if (n.kind == Need::resource && !allowed(principal, req, n.op, n.type, n.name) &&
        !(n.or_describe_configs &&
          allowed(principal, req, AclOperation::describe_configs, n.type, n.name))) {
      return denied(principal, req, n.op, n.type == ResourceType::cluster ? "Cluster" : "Subject",
                    n.type == ResourceType::cluster ? n.name : n.subject);
    }
    if (n.kind == Need::schema_id) {
      // The id's subjects, asked as this principal (in a cluster the writer may answer: it
      // checks the same credentials against the same ACLs).
      HttpRequest q = req;
      q.method = "GET";
      q.path = "/schemas/ids/" + n.name + "/subjects";
      q.query.clear();
      q.body.clear();
      HttpResponse r = inner_(q);
      if (r.status != 200) return inner_(req);  // an unknown id: its own 404
      json subjects = json::parse(r.body, nullptr, false);
      bool any = false;
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
  bool allowed(const std::string& principal, const HttpRequest& req, AclOperation op,
               ResourceType type, const std::string& name) const {
    return authorizer_.authorize(principal, req.peer, op, type, name);
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

HttpHandler authorized_registry(HttpHandler inner, const security::Authorizer* authorizer) {
  if (authorizer == nullptr) return inner;
  auto guard = std::make_shared<Guard>(std::move(inner), *authorizer);
  return [guard](const HttpRequest& req) { return (*guard)(req); };
}

}  // namespace strata::broker::schema
