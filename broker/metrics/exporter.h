// MetricsExporter: the Prometheus HTTP endpoint (GET /metrics, text exposition format 0.0.4) on
// metrics.listener, over HTTPS when metrics.ssl.enabled and behind HTTP basic auth when
// metrics.basic.auth.user is set. Served by broker/net/http_server.h (its own 2 threads; why not
// prometheus-cpp's CivetWeb Exposer is said there) from a ScrapeCollector, serialized with
// prometheus-cpp's TextSerializer. Owned by Broker: created in start() once the services exist,
// destroyed in run() after the I/O threads stopped and before the services it reads are closed.
// Not copyable; construct/destroy from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "protocol/base/result.h"

namespace prometheus {
class Counter;
class Registry;
class Summary;
}  // namespace prometheus

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace strata::broker {
struct BrokerConfig;
class HttpServer;
struct HttpRequest;
struct HttpResponse;
struct Services;
}  // namespace strata::broker

namespace strata::broker::metrics {

class ScrapeCollector;

struct MetricsAddress {
  std::string host;  // empty -> all interfaces
  uint16_t port = 0;
};
// Parses "host:port", ":port" or "[v6]:port" (port 0 = any free port). Errc::invalid_argument.
Result<MetricsAddress> parse_metrics_listener(const std::string& value);

struct MetricsSecurity {
  std::shared_ptr<boost::asio::ssl::context> tls;  // null = plain HTTP
  std::string basic_auth_user;                     // "" = no authentication
  std::string basic_auth_password;
};
// From metrics.ssl.* and metrics.basic.auth.*: the TLS context is built (files read) here, so a
// bad key stops the start with a message naming it (Errc::invalid_argument).
Result<MetricsSecurity> metrics_security(const BrokerConfig& config);

class MetricsExporter {
 public:
  // Binds `address` and starts serving; Errc::io_error when the port cannot be bound.
  static Result<std::unique_ptr<MetricsExporter>> start(Services& svc,
                                                        const MetricsAddress& address,
                                                        MetricsSecurity security = {});
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  bool tls() const { return tls_; }
  // "http(s)://host:port/metrics", for the start-up log line.
  std::string url() const;

 private:
  MetricsExporter() = default;
  HttpResponse serve(const HttpRequest& request);  // GET /metrics, on the server's threads
  std::shared_ptr<ScrapeCollector> collector_;
  // The endpoint's own series, under prometheus-cpp Exposer's names (dashboards keep working).
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Counter* scrapes_ = nullptr;
  prometheus::Counter* bytes_ = nullptr;
  prometheus::Summary* latencies_ = nullptr;
  std::unique_ptr<HttpServer> server_;  // last: stopped (joined) before the rest goes
  std::string host_;
  uint16_t port_ = 0;
  bool tls_ = false;
};

}  // namespace strata::broker::metrics
