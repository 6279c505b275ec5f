// The embedded Schema Registry's REST API (Confluent's paths, bodies, content type
// `application/vnd.schemaregistry.v1+json` and error bodies {"error_code", "message"}), served by
// an HttpServer (broker/net/http_server.h: its own threads, bounded connections and bodies) on
// schema.registry.listener. docs/schema-registry.md lists the routes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "protocol/base/result.h"

namespace strata::broker {
class HttpServer;
struct HttpRequest;
struct HttpResponse;
}  // namespace strata::broker

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

class RegistryServer {
 public:
  // Binds and serves; Errc::io_error when the address cannot be bound.
  static Result<std::unique_ptr<RegistryServer>> start(SchemaRegistry& registry,
                                                       const RegistryAddress& address);
  ~RegistryServer();
  uint16_t port() const;
  std::string url() const;

 private:
  RegistryServer() = default;
  std::unique_ptr<HttpServer> http_;
  std::string host_;
};

}  // namespace strata::broker::schema
