// MetricsExporter: the Prometheus HTTP endpoint (GET /metrics, text exposition format 0.0.4) on
// metrics.listener, served by prometheus-cpp's Exposer (its own civetweb threads) from a
// ScrapeCollector. Owned by Broker: created in start() once the services exist, destroyed in run()
// after the I/O threads stopped and before the services it reads are closed. Not copyable;
// construct/destroy from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "protocol/base/result.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace strata::broker {
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

class MetricsExporter {
 public:
  // Binds `address` and starts serving; Errc::io_error when the port cannot be bound.
  static Result<std::unique_ptr<MetricsExporter>> start(Services& svc,
                                                        const MetricsAddress& address);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }

 private:
  MetricsExporter() = default;
  std::shared_ptr<ScrapeCollector> collector_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string host_;
  uint16_t port_ = 0;
};

}  // namespace strata::broker::metrics
