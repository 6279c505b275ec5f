// Small builders for prometheus::MetricFamily values (name, help, type, labelled samples), used by
// every collector of broker/metrics at scrape time. Header-only helpers; no shared state.
#pragma once

#include <prometheus/metric_family.h>

#include <initializer_list>
#include <string>
#include <utility>

namespace strata::broker::metrics {

using Labels = std::initializer_list<std::pair<const char*, std::string>>;

inline prometheus::MetricFamily family(std::string name, std::string help,
                                       prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

inline prometheus::ClientMetric& add_sample(prometheus::MetricFamily& f, Labels labels,
                                            double value) {
  auto& m = f.metric.emplace_back();
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  switch (f.type) {
    case prometheus::MetricType::Counter:
      m.counter.value = value;
      break;
    case prometheus::MetricType::Gauge:
      m.gauge.value = value;
      break;
    default:
      m.untyped.value = value;
      break;
  }
  return m;
}

// A family of one unlabelled sample (a broker-wide gauge or counter).
inline prometheus::MetricFamily one_sample(std::string name, std::string help,
                                           prometheus::MetricType type, double value) {
  auto f = family(std::move(name), std::move(help), type);
  add_sample(f, {}, value);
  return f;
}

}  // namespace strata::broker::metrics
