// The Schema Registry's REST API; see registry_http.h.
#include "broker/schema/registry_http.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "broker/net/http_server.h"
#include "broker/schema/registry_records.h"
#include "broker/schema/schema_registry.h"
#include "protocol/base/percent_escape.h"

namespace strata::broker::schema {

using nlohmann::json;
using namespace detail;

namespace {

constexpr const char* kContentType = "application/vnd.schemaregistry.v1+json";

HttpResponse reply(int status, const json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = kContentType;
  r.body = body.dump();
  return r;
}
HttpResponse error_reply(const RegistryError& e) {
  return reply(e.http_status, {{"error_code", e.error_code}, {"message", e.message}});
}
HttpResponse not_found() {
  return reply(404, {{"error_code", 404}, {"message", "HTTP 404 Not Found"}});
}
HttpResponse not_allowed() {
  return reply(405, {{"error_code", 405}, {"message", "HTTP 405 Method Not Allowed"}});
}

// Query parameters that are flags: present with "true".
bool flag(const std::string& query, const std::string& name) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t amp = query.find('&', pos);
    if (amp == std::string::npos) amp = query.size();
    const std::string_view part(query.data() + pos, amp - pos);
    if (part == name + "=true") return true;
    pos = amp + 1;
  }
  return false;
}

// Well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, at most U+10FFFF): subject names go
// into JSON, which must be UTF-8.
bool valid_utf8(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};  // by continuation bytes
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = c;
    if (c >= 0x80) {
      if ((c & 0xe0) == 0xc0) {
        n = 1;
        cp = c & 0x1f;
      } else if ((c & 0xf0) == 0xe0) {
        n = 2;
        cp = c & 0x0f;
      } else if ((c & 0xf8) == 0xf0) {
        n = 3;
        cp = c & 0x07;
      } else {
        return false;
      }
    }
    if (n >= s.size() - i) return false;  // truncated
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

// The path's segments, percent-decoded; nullopt when one does not decode (or is not UTF-8).
std::optional<std::vector<std::string>> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < path.size()) {
    if (path[pos] == '/') {
      ++pos;
      continue;
    }
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    auto s = percent_unescape(std::string_view(path).substr(pos, slash - pos));
    if (!s || !valid_utf8(*s)) return std::nullopt;
    out.push_back(std::move(*s));
    pos = slash;
  }
  return out;
}

json version_json(const SubjectVersion& v, const SchemaEntry& e) {
  json j = {{"subject", v.subject}, {"version", v.version}, {"id", v.id}};
  if (e.type != "AVRO") j["schemaType"] = e.type;
  if (!e.references.empty()) j["references"] = references_json(e.references);
  j["schema"] = e.schema;
  return j;
}

// A register / lookup / compatibility body: {"schema", "schemaType", "references", ...}.
std::optional<RegisterRequest> parse_body(const std::string& body, RegistryError& e) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object()) {
    e = err(400, 400, "The request body is not a JSON object");
    return std::nullopt;
  }
  RegisterRequest r;
  if (!j.contains("schema") || !j["schema"].is_string() || j["schema"].get<std::string>().empty()) {
    e = err(422, 42201, "Empty schema");
    return std::nullopt;
  }
  r.schema = j["schema"];
  if (j.contains("schemaType") && !j["schemaType"].is_null()) {
    if (!j["schemaType"].is_string()) {
      e = err(422, 42201, "Invalid schemaType");
      return std::nullopt;
    }
    r.type = j["schemaType"];
  }
  if (j.contains("references") && !j["references"].is_null()) {
    if (!j["references"].is_array()) {
      e = err(422, 42201, "Invalid references");
      return std::nullopt;
    }
    for (const auto& ref : j["references"]) {
      if (!ref.is_object() || !ref.contains("name") || !ref["name"].is_string() ||
          !ref.contains("subject") || !ref["subject"].is_string() || !ref.contains("version") ||
          !ref["version"].is_number_integer()) {
        e = err(422, 42201, "Invalid reference: needs name, subject and version");
        return std::nullopt;
      }
      r.references.push_back({ref["name"], ref["subject"], ref["version"]});
    }
  }
  if (j.contains("id") && j["id"].is_number_integer()) r.id = j["id"].get<int32_t>();
  if (j.contains("version") && j["version"].is_number_integer()) {
    r.version = j["version"].get<int32_t>();
  }
  return r;
}

std::optional<std::string> string_field(const std::string& body, const char* name) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains(name) || !j[name].is_string()) return std::nullopt;
  return j[name].get<std::string>();
}

HttpResponse subjects_routes(SchemaRegistry& reg, const HttpRequest& req,
                             const std::vector<std::string>& seg) {
  const bool deleted = flag(req.query, "deleted");
  const bool permanent = flag(req.query, "permanent");
  if (seg.size() == 1) {
    if (req.method != "GET") return not_allowed();
    return reply(200, reg.subjects(deleted));
  }
  const std::string& subject = seg[1];
  if (seg.size() == 2) {
    if (req.method == "POST") {
      RegistryError e;
      auto body = parse_body(req.body, e);
      if (!body) return error_reply(e);
      auto a = reg.lookup(subject, *body, deleted);
      if (!a.ok()) return error_reply(a.error);
      return reply(200, version_json(a.value->first, a.value->second));
    }
    if (req.method == "DELETE") {
      auto a = reg.delete_subject(subject, permanent);
      return a.ok() ? reply(200, *a.value) : error_reply(a.error);
    }
    return not_allowed();
  }
  if (seg[2] != "versions") return not_found();
  if (seg.size() == 3) {
    if (req.method == "GET") {
      auto a = reg.versions(subject, deleted);
      return a.ok() ? reply(200, *a.value) : error_reply(a.error);
    }
    if (req.method == "POST") {
      RegistryError e;
      auto body = parse_body(req.body, e);
      if (!body) return error_reply(e);
      auto a = reg.register_schema(subject, *body);
      if (a.ok()) {
        spdlog::info("schema registry: {} registered under {} (id {})", body->type, subject,
                     *a.value);
      }
      return a.ok() ? reply(200, {{"id", *a.value}}) : error_reply(a.error);
    }
    return not_allowed();
  }
  const std::string& version = seg[3];
  if (seg.size() == 4) {
    if (req.method == "GET") {
      auto a = reg.version(subject, version, deleted);
      return a.ok() ? reply(200, version_json(a.value->first, a.value->second))
                    : error_reply(a.error);
    }
    if (req.method == "DELETE") {
      auto a = reg.delete_version(subject, version, permanent);
      return a.ok() ? reply(200, *a.value) : error_reply(a.error);
    }
    return not_allowed();
  }
  if (seg.size() == 5 && seg[4] == "referencedby") {
    if (req.method != "GET") return not_allowed();
    auto a = reg.referenced_by(subject, version);
    return a.ok() ? reply(200, *a.value) : error_reply(a.error);
  }
  if (seg.size() == 5 && seg[4] == "schema") {
    if (req.method != "GET") return not_allowed();
    auto a = reg.version(subject, version, deleted);
    if (!a.ok()) return error_reply(a.error);
    HttpResponse r;
    r.content_type = kContentType;
    r.body = a.value->second.schema;
    return r;
  }
  return not_found();
}

HttpResponse schemas_routes(SchemaRegistry& reg, const HttpRequest& req,
                            const std::vector<std::string>& seg) {
  if (req.method != "GET") return not_allowed();
  if (seg.size() == 2 && seg[1] == "types") return reply(200, SchemaRegistry::types());
  if (seg.size() < 3 || seg.size() > 4 || seg[1] != "ids") return not_found();
  auto id = parse_int(seg[2]);
  if (!id) return error_reply(err(404, 40403, "Schema not found"));
  if (seg.size() == 4 && (seg[3] == "versions" || seg[3] == "subjects")) {
    auto a = reg.versions_of_id(*id, flag(req.query, "deleted"));
    if (!a.ok()) return error_reply(a.error);
    json out = json::array();
    for (const auto& v : *a.value) {
      if (seg[3] == "versions") {
        out.push_back({{"subject", v.subject}, {"version", v.version}});
      } else if (std::find(out.begin(), out.end(), json(v.subject)) == out.end()) {
        out.push_back(v.subject);
      }
    }
    return reply(200, out);
  }
  auto a = reg.schema_by_id(*id);
  if (!a.ok()) return error_reply(a.error);
  if (seg.size() == 4) {
    if (seg[3] != "schema") return not_found();
    HttpResponse r;
    r.content_type = kContentType;
    r.body = a.value->schema;
    return r;
  }
  json j = {{"schema", a.value->schema}};
  if (a.value->type != "AVRO") j["schemaType"] = a.value->type;
  if (!a.value->references.empty()) j["references"] = references_json(a.value->references);
  return reply(200, j);
}

HttpResponse route(SchemaRegistry& registry, const HttpRequest& req);

HttpResponse config_routes(SchemaRegistry& reg, const HttpRequest& req,
                           const std::vector<std::string>& seg) {
  if (seg.size() > 2) return not_found();
  std::optional<std::string> subject;
  if (seg.size() == 2) subject = seg[1];
  if (seg[0] == "mode") {
    if (req.method == "GET") {
      auto a = reg.mode(subject);
      return reply(200, {{"mode", mode_name(*a.value)}});
    }
    if (req.method != "PUT") return not_allowed();
    auto m = string_field(req.body, "mode");
    if (!m) return error_reply(err(422, 42204, "Invalid mode: the body needs \"mode\""));
    auto a = reg.set_mode(subject, *m);
    return a.ok() ? reply(200, {{"mode", mode_name(*a.value)}}) : error_reply(a.error);
  }
  if (req.method == "GET") {
    auto a = reg.compatibility(subject, flag(req.query, "defaultToGlobal"));
    return a.ok() ? reply(200, {{"compatibilityLevel", compatibility_name(*a.value)}})
                  : error_reply(a.error);
  }
  if (req.method == "PUT") {
    auto c = string_field(req.body, "compatibility");
    if (!c) {
      return error_reply(
          err(422, 42203, "Invalid compatibility level: the body needs \"compatibility\""));
    }
    auto a = reg.set_compatibility(subject, *c);
    return a.ok() ? reply(200, {{"compatibility", compatibility_name(*a.value)}})
                  : error_reply(a.error);
  }
  if (req.method == "DELETE") {
    auto a = reg.delete_compatibility(subject);
    return a.ok() ? reply(200, {{"compatibilityLevel", compatibility_name(*a.value)}})
                  : error_reply(a.error);
  }
  return not_allowed();
}

}  // namespace

std::optional<std::vector<std::string>> registry_path_segments(const std::string& path) {
  return segments(path);
}

Result<RegistryAddress> parse_registry_listener(const std::string& value) {
  std::string v = value;
  RegistryAddress a;
  if (v.rfind("https://", 0) == 0) {
    a.https = true;
    v = v.substr(8);
  } else if (v.rfind("http://", 0) == 0) {
    v = v.substr(7);
  }
  if (!v.empty() && v.back() == '/') v.pop_back();
  const size_t colon = v.rfind(':');
  if (colon == std::string::npos) {
    return Status(Errc::invalid_argument,
                  "schema.registry.listener: expected http://host:port, got '" + value + "'");
  }
  a.host = v.substr(0, colon);
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']') {
    a.host = a.host.substr(1, a.host.size() - 2);
  }
  auto port = parse_int(v.substr(colon + 1));
  if (!port || *port < 0 || *port > 65535) {
    return Status(Errc::invalid_argument, "schema.registry.listener: bad port in '" + value + "'");
  }
  a.port = static_cast<uint16_t>(*port);
  return a;
}

HttpResponse handle_registry_request(SchemaRegistry& registry, const HttpRequest& req) {
  // Nothing here should throw; if something does, this request fails, not the broker.
  try {
    return route(registry, req);
  } catch (const std::exception& e) {
    spdlog::error("schema registry: {} {}: {}", req.method, req.path, e.what());
    return error_reply(err(500, 50001, "Internal error"));
  }
}

namespace {

HttpResponse route(SchemaRegistry& registry, const HttpRequest& req) {
  auto seg = segments(req.path);
  if (!seg) return not_found();
  if (seg->empty()) return req.method == "GET" ? reply(200, json::object()) : not_allowed();
  const std::string& root = (*seg)[0];
  if (root == "subjects") return subjects_routes(registry, req, *seg);
  if (root == "schemas") return schemas_routes(registry, req, *seg);
  if (root == "config" || root == "mode") return config_routes(registry, req, *seg);
  if (root == "compatibility" && seg->size() == 5 && (*seg)[1] == "subjects" &&
      (*seg)[3] == "versions") {
    if (req.method != "POST") return not_allowed();
    RegistryError e;
    auto body = parse_body(req.body, e);
    if (!body) return error_reply(e);
    auto a = registry.check_compatibility((*seg)[2], (*seg)[4], *body);
    if (!a.ok()) return error_reply(a.error);
    json out = {{"is_compatible", a.value->empty()}};
    if (flag(req.query, "verbose")) out["messages"] = *a.value;
    return reply(200, out);
  }
  return not_found();
}

}  // namespace

HttpResponse registry_error_response(int http_status, int error_code, std::string message) {
  return error_reply(err(http_status, error_code, std::move(message)));
}

Result<std::unique_ptr<RegistryServer>> RegistryServer::start(SchemaRegistry& registry,
                                                              const RegistryAddress& address,
                                                              RegistrySecurity security) {
  return start(
      address,
      [&registry](const HttpRequest& req) { return handle_registry_request(registry, req); },
      std::move(security));
}

Result<std::unique_ptr<RegistryServer>> RegistryServer::start(const RegistryAddress& address,
                                                              HttpHandler handler,
                                                              RegistrySecurity security,
                                                              RegistryWaits waits) {
  HttpServerOptions o;
  o.name = "schema registry";
  o.tls = std::move(security.tls);
  o.authenticate = std::move(security.authenticate);
  o.authenticate_at_hand = std::move(security.authenticate_at_hand);
  o.realm = "schema-registry";
  o.unauthorized_content_type = kContentType;
  o.unauthorized_body = json({{"error_code", 401}, {"message", "Unauthorized"}}).dump();
  o.max_body_bytes = 4 * 1024 * 1024;  // schemas with many fields run to hundreds of KiB
  // Requests that may wait run on a pool of 4, so that one slow writer or journal holds neither
  // the reads of other clients nor every client.
  o.threads = 4;
  o.blocking_threads = 4;
  if (waits == RegistryWaits::every_request) {
    o.may_block = [](const HttpRequest&) { return true; };
  } else {
    o.may_block = [](const HttpRequest& r) { return r.method != "GET" && r.method != "HEAD"; };
  }
  std::unique_ptr<RegistryServer> s(new RegistryServer());
  s->http_ = std::make_unique<HttpServer>(o);
  s->host_ = address.host.empty() ? "0.0.0.0" : address.host;
  s->http_->route_prefix("/", std::move(handler));
  STRATA_RETURN_IF_ERROR(s->http_->start(address.host, address.port));
  return s;
}

RegistryServer::~RegistryServer() {
  if (http_) http_->stop();
}

uint16_t RegistryServer::port() const { return http_->port(); }

std::string RegistryServer::url() const {
  return (http_->tls() ? "https://" : "http://") + host_ + ":" + std::to_string(port());
}

}  // namespace strata::broker::schema
