#include "broker/metrics/exporter.h"

#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <prometheus/summary.h>
#include <prometheus/text_serializer.h>

#include <charconv>
#include <chrono>

#include "broker/config/config.h"
#include "broker/metrics/families.h"
#include "broker/metrics/scrape_collector.h"
#include "broker/net/http_server.h"
#include "broker/security/tls_context.h"

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

Result<MetricsSecurity> metrics_security(const BrokerConfig& c) {
  MetricsSecurity s;
  s.basic_auth_user = c.metrics_basic_auth_user;
  s.basic_auth_password = c.metrics_basic_auth_password;
  if (c.metrics_ssl_enabled) {
    auto ctx = security::make_prefixed_tls_context(c, "metrics.", "metrics endpoint");
    if (!ctx.ok()) return ctx.status();
    s.tls = *ctx;
  }
  return s;
}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::start(Services& svc,
                                                                const MetricsAddress& address,
                                                                MetricsSecurity security) {
  std::unique_ptr<MetricsExporter> e(new MetricsExporter());
  e->host_ = address.host.empty() ? "0.0.0.0" : address.host;
  e->tls_ = security.tls != nullptr;
  e->collector_ = std::make_shared<ScrapeCollector>(svc);
  e->registry_ = std::make_shared<prometheus::Registry>();
  e->scrapes_ = &prometheus::BuildCounter()
                     .Name("exposer_scrapes_total")
                     .Help("Number of times metrics were scraped")
                     .Register(*e->registry_)
                     .Add({});
  e->bytes_ = &prometheus::BuildCounter()
                   .Name("exposer_transferred_bytes_total")
                   .Help("Transferred bytes to metrics services")
                   .Register(*e->registry_)
                   .Add({});
  e->latencies_ =
      &prometheus::BuildSummary()
           .Name("exposer_request_latencies")
           .Help("Latencies of serving scrape requests, in microseconds")
           .Register(*e->registry_)
           .Add({}, prometheus::Summary::Quantiles{{0.5, 0.05}, {0.9, 0.01}, {0.99, 0.001}});

  HttpServerOptions o;
  o.name = "metrics endpoint";
  o.tls = std::move(security.tls);
  o.basic_auth_user = std::move(security.basic_auth_user);
  o.basic_auth_password = std::move(security.basic_auth_password);
  o.realm = "strata metrics";
  o.threads = 2;            // a scrape and a concurrent health probe; scrapes are rare and short
  o.max_body_bytes = 4096;  // a GET has none
  e->server_ = std::make_unique<HttpServer>(std::move(o));
  MetricsExporter* self = e.get();
  e->server_->route("/metrics", [self](const HttpRequest& r) { return self->serve(r); });
  Status st = e->server_->start(address.host, address.port);
  if (!st.ok()) return Status(Errc::io_error, "cannot listen for metrics: " + st.message());
  e->port_ = e->server_->port();
  return e;
}

HttpResponse MetricsExporter::serve(const HttpRequest& r) {
  if (r.method != "GET" && r.method != "HEAD") {
    return HttpResponse{
        405, "text/plain; charset=utf-8", "GET or HEAD\n", {{"Allow", "GET, HEAD"}}};
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto families = collector_->Collect();
  const HttpServerStats& st = server_->stats();
  auto refused = family("strata_metrics_http_refusals_total",
                        "Refused on the metrics endpoint: requests without valid credentials "
                        "(unauthorized), failed TLS handshakes, bad or oversized requests, "
                        "connections over the limit",
                        prometheus::MetricType::Counter);
  add_sample(refused, {{"reason", "unauthorized"}}, static_cast<double>(st.unauthorized.load()));
  add_sample(refused, {{"reason", "tls_handshake"}},
             static_cast<double>(st.tls_handshake_failures.load()));
  add_sample(refused, {{"reason", "bad_request"}}, static_cast<double>(st.bad_requests.load()));
  add_sample(refused, {{"reason", "connection_limit"}},
             static_cast<double>(st.refused_connections.load()));
  families.push_back(std::move(refused));
  for (auto& f : registry_->Collect()) families.push_back(std::move(f));
  HttpResponse res;
  res.content_type = "text/plain; version=0.0.4; charset=utf-8";
  res.body = prometheus::TextSerializer().Serialize(families);
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  bytes_->Increment(static_cast<double>(res.body.size()));
  scrapes_->Increment();
  latencies_->Observe(static_cast<double>(us.count()));
  return res;
}

std::string MetricsExporter::url() const {
  const std::string h = host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_;
  return std::string(tls_ ? "https" : "http") + "://" + h + ":" + std::to_string(port_) +
         "/metrics";
}

MetricsExporter::~MetricsExporter() {
  // Stops the HTTP threads (joins any scrape in progress) before the collector goes.
  server_.reset();
}

}  // namespace strata::broker::metrics
