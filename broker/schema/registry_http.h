// The embedded Schema Registry's REST API (Confluent's paths, bodies, content type
// `application/vnd.schemaregistry.v1+json` and error bodies {"error_code", "message"}), served by
// an HttpServer (broker/net/http_server.h: its own threads, bounded connections and bodies) on
// schema.registry.listener. docs/schema-registry.md lists the routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "broker/net/http_server.h"
#include "protocol/base/result.h"

namespace strata::broker::schema {

class SchemaRegistry;

struct RegistryAddress {
  std::string host;
  uint16_t port = 0;
};
// "http://host:port" (the scheme may be left out; port 0 = a free port). https is not served
// yet: Errc::invalid_argument.
Result<RegistryAddress> parse_registry_listener(const std::string& value);

// Answers one request (any thread): the routing and JSON of the REST API. Public for tests.
HttpResponse handle_registry_request(SchemaRegistry& registry, const HttpRequest& req);
// An error as the registry answers it: {"error_code", "message"} with its content type.
HttpResponse registry_error_response(int http_status, int error_code, std::string message);

class RegistryServer {
 public:
  // Binds and serves; Errc::io_error when the address cannot be bound.
  static Result<std::unique_ptr<RegistryServer>> start(SchemaRegistry& registry,
                                                       const RegistryAddress& address);
  // Serves `handler` instead (a cluster's routing to the writer, registry_cluster.h).
  static Result<std::unique_ptr<RegistryServer>> start(const RegistryAddress& address,
                                                       HttpHandler handler);
  ~RegistryServer();
  uint16_t port() const;
  const std::string& host() const { return host_; }  // as bound ("0.0.0.0" for any)
  std::string url() const;

 private:
  RegistryServer() = default;
  std::unique_ptr<HttpServer> http_;
  std::string host_;
};

}  // namespace strata::broker::schema
