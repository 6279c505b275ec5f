// The embedded Schema Registry's REST API (Confluent's paths, bodies, content type
// `application/vnd.schemaregistry.v1+json` and error bodies {"error_code", "message"}), served by
// an HttpServer (broker/net/http_server.h: its own threads, bounded connections and bodies) on
// schema.registry.listener. docs/schema-registry.md lists the routes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/net/http_server.h"
#include "protocol/base/result.h"

namespace strata::broker::schema {

class SchemaRegistry;

struct RegistryAddress {
  std::string host;
  uint16_t port = 0;
  bool https = false;
};
// "http://host:port" or "https://host:port" (no scheme = http; port 0 = a free port).
Result<RegistryAddress> parse_registry_listener(const std::string& value);

// How the registry's listener is secured (registry_access.h says what each check means).
struct RegistrySecurity {
  std::shared_ptr<boost::asio::ssl::context> tls;  // set for an https:// listener
  // Set = HTTP basic auth: (user, password) → valid.
  std::function<bool(const std::string&, const std::string&)> authenticate;
  // authenticate's answer without a derivation, else nullopt (HttpServerOptions).
  std::function<std::optional<bool>(const std::string&, const std::string&)> authenticate_at_hand;
};

// A request path's segments, percent-decoded; nullopt when one does not decode to UTF-8.
std::optional<std::vector<std::string>> registry_path_segments(const std::string& path);

// Answers one request (any thread): the routing and JSON of the REST API. Public for tests.
HttpResponse handle_registry_request(SchemaRegistry& registry, const HttpRequest& req);
// An error as the registry answers it: {"error_code", "message"} with its content type.
HttpResponse registry_error_response(int http_status, int error_code, std::string message);

// Which requests may wait long enough to hold a thread: a write waits for its journal append;
// in a cluster any request may wait for the writer (a forwarded write, a read the copy cannot
// answer). Those run on the HTTP server's pool (HttpServerOptions::may_block).
enum class RegistryWaits { writes, every_request };

class RegistryServer {
 public:
  // Binds and serves; Errc::io_error when the address cannot be bound.
  static Result<std::unique_ptr<RegistryServer>> start(SchemaRegistry& registry,
                                                       const RegistryAddress& address,
                                                       RegistrySecurity security = {});
  // Serves `handler` instead (a cluster's routing to the writer, registry_cluster.h).
  static Result<std::unique_ptr<RegistryServer>> start(const RegistryAddress& address,
                                                       HttpHandler handler,
                                                       RegistrySecurity security = {},
                                                       RegistryWaits waits = RegistryWaits::writes);
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
