#include "broker/metrics/exporter.h"

#include <prometheus/exposer.h>

#include <charconv>
#include <exception>

#include "broker/metrics/scrape_collector.h"

namespace strata::broker::metrics {

Result<MetricsAddress> parse_metrics_listener(const std::string& value) {
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos) {
    return Status(Errc::invalid_argument, "metrics.listener '" + value + "' is not host:port");
  }
  MetricsAddress a;
  a.host = value.substr(0, colon);
  if (a.host.size() >= 2 && a.host.front() == '[' && a.host.back() == ']') {
    a.host = a.host.substr(1, a.host.size() - 2);
  } else if (a.host.find(':') != std::string::npos) {
    return Status(Errc::invalid_argument,
                  "metrics.listener '" + value + "': write IPv6 hosts as [addr]:port");
  }
  const std::string port = value.substr(colon + 1);
  unsigned p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p > 65535) {
    return Status(Errc::invalid_argument,
                  "metrics.listener '" + value + "': bad port '" + port + "'");
  }
  a.port = static_cast<uint16_t>(p);
  return a;
}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::start(Services& svc,
                                                                const MetricsAddress& address) {
  std::unique_ptr<MetricsExporter> e(new MetricsExporter());
  const bool v6 = address.host.find(':') != std::string::npos;
  e->host_ = address.host.empty() ? "0.0.0.0" : address.host;
  const std::string bind =
      (v6 ? "[" + address.host + "]" : e->host_) + ":" + std::to_string(address.port);
  try {
    // Two HTTP threads: a scrape and a concurrent health probe; scrapes are rare and short.
    e->exposer_ = std::make_unique<prometheus::Exposer>(bind, 2);
  } catch (const std::exception& ex) {
    return Status(Errc::io_error, "cannot listen for metrics on " + bind + ": " + ex.what());
  }
  auto ports = e->exposer_->GetListeningPorts();
  if (ports.empty()) return Status(Errc::io_error, "metrics listener " + bind + " bound no port");
  e->port_ = static_cast<uint16_t>(ports.front());
  e->collector_ = std::make_shared<ScrapeCollector>(svc);
  e->exposer_->RegisterCollectable(e->collector_);
  return e;
}

MetricsExporter::~MetricsExporter() {
  // Stops the HTTP threads (joins any scrape in progress) before the collector goes.
  exposer_.reset();
}

}  // namespace strata::broker::metrics
