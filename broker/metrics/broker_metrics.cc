#include "broker/metrics/broker_metrics.h"

#include "broker/handler.h"
#include "broker/metrics/families.h"
#include "broker/net/connection.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/table_config.h"
#include "protocol/ext/api_keys.h"
#include "protocol/messages/api_table.h"
#include "protocol/wire/errors.h"

namespace strata::broker {

// Declared in broker/handler.h: RequestContext::respond() reports a non-zero top-level error_code.
void note_response_error(Services& svc, int16_t api_key, protocol::ErrorCode error_code) {
  svc.metrics.request_error(api_key, error_code);
}

}  // namespace strata::broker

namespace strata::broker::metrics {

using prometheus::MetricType;

std::string api_name(int16_t api_key) {
  if (const auto* ext = protocol::ext::find_api(api_key)) return std::string(ext->name);
  if (const auto* info = protocol::find_api(api_key)) return info->name;
  return "Api" + std::to_string(api_key);
}

BrokerMetrics::BrokerMetrics(const std::vector<int16_t>& api_keys) : slots_(new ApiSlot[kSlots]) {
  for (int16_t k : api_keys) {
    if (ApiSlot* s = slot(k)) s->served = true;
  }
}

BrokerMetrics::~BrokerMetrics() = default;

BrokerMetrics::ApiSlot* BrokerMetrics::slot(int16_t api_key) {
  if (api_key >= 0 && api_key < 128) return &slots_[static_cast<size_t>(api_key)];
  if (protocol::ext::is_extension_key(api_key)) {
    return &slots_[128 + static_cast<size_t>(api_key - protocol::ext::kFirstKey)];
  }
  return nullptr;
}

const BrokerMetrics::ApiSlot* BrokerMetrics::slot(int16_t api_key) const {
  return const_cast<BrokerMetrics*>(this)->slot(api_key);
}

int16_t BrokerMetrics::key_of(size_t index) {
  return static_cast<int16_t>(index < 128 ? index : protocol::ext::kFirstKey + (index - 128));
}

void BrokerMetrics::request_received(int16_t api_key) {
  if (ApiSlot* s = slot(api_key)) s->requests.fetch_add(1, std::memory_order_relaxed);
}

void BrokerMetrics::request_completed(int16_t api_key, double seconds) {
  if (ApiSlot* s = slot(api_key)) s->latency.observe(seconds);
}

void BrokerMetrics::request_error(int16_t api_key, protocol::ErrorCode error_code, uint64_t n) {
  if (error_code == protocol::ErrorCode::none) return;
  ApiSlot* s = slot(api_key);
  if (!s) return;
  // Codes outside the table share the UNKNOWN_SERVER_ERROR (-1) slot.
  const int16_t v = protocol::error_value(error_code);
  int c = v < kMinCode || v > kMaxCode ? -1 : v;
  s->errors[static_cast<size_t>(c - kMinCode)].fetch_add(n, std::memory_order_relaxed);
}

void BrokerMetrics::authorization_denied(int16_t api_key) {
  if (ApiSlot* s = slot(api_key)) s->denials.fetch_add(1, std::memory_order_relaxed);
}

void BrokerMetrics::connection_opened() {
  active_connections_.fetch_add(1, std::memory_order_relaxed);
  connections_total_.fetch_add(1, std::memory_order_relaxed);
}

void BrokerMetrics::connection_closed() {
  active_connections_.fetch_sub(1, std::memory_order_relaxed);
}

std::vector<prometheus::MetricFamily> BrokerMetrics::collect(
    std::span<const std::shared_ptr<const TopicEntry>> topics) const {
  std::vector<prometheus::MetricFamily> out;
  auto requests =
      family("strata_requests_total", "Requests received, by API.", MetricType::Counter);
  auto errors = family("strata_request_errors_total",
                       "Kafka error codes answered (top-level or per partition), by API and error.",
                       MetricType::Counter);
  auto latency = family("strata_request_duration_seconds",
                        "Time from a request frame's arrival to its response being ready, by API.",
                        MetricType::Histogram);
  auto denials =
      family("strata_authorization_denials_total",
             "Checks the ACL authorizer refused (one request may count several), by API.",
             MetricType::Counter);
  for (size_t i = 0; i < kSlots; ++i) {
    const ApiSlot& s = slots_[i];
    if (!s.served) continue;
    const std::string name = api_name(key_of(i));
    add_sample(requests, {{"api", name}},
               static_cast<double>(s.requests.load(std::memory_order_relaxed)));
    add_sample(denials, {{"api", name}},
               static_cast<double>(s.denials.load(std::memory_order_relaxed)));
    auto& h = latency.metric.emplace_back();
    h.label.push_back({"api", name});
    h.histogram = s.latency.snapshot();
    for (size_t c = 0; c < s.errors.size(); ++c) {
      uint64_t n = s.errors[c].load(std::memory_order_relaxed);
      if (n == 0) continue;
      const int16_t code = static_cast<int16_t>(static_cast<int>(c) + kMinCode);
      add_sample(errors,
                 {{"api", name},
                  {"error", protocol::error_name(static_cast<protocol::ErrorCode>(code))},
                  {"code", std::to_string(code)}},
                 static_cast<double>(n));
    }
  }
  out.push_back(std::move(requests));
  out.push_back(std::move(errors));
  out.push_back(std::move(latency));
  out.push_back(std::move(denials));

  const auto gauge = MetricType::Gauge;
  const auto counter = MetricType::Counter;
  out.push_back(
      one_sample("strata_connections_active", "Open client connections.", gauge,
                 static_cast<double>(active_connections_.load(std::memory_order_relaxed))));
  out.push_back(
      one_sample("strata_connections_total", "Client connections accepted since start.", counter,
                 static_cast<double>(connections_total_.load(std::memory_order_relaxed))));
  out.push_back(one_sample(
      "strata_authentication_failures_total",
      "SASL authentications that failed (connections closed after "
      "connection.failed.authentication.delay.ms).",
      counter, static_cast<double>(authentication_failures_.load(std::memory_order_relaxed))));
  out.push_back(one_sample("strata_connections_queued_response_bytes",
                           "Response bytes answered but not yet written to their sockets, all "
                           "connections (file ranges by length; bounded per connection by "
                           "connection.max.queued.response.bytes).",
                           gauge, static_cast<double>(Connection::total_queued_response_bytes())));
  out.push_back(one_sample("strata_connections_queued_response_memory_bytes",
                           "Of those, the bytes held in memory (file ranges excluded); at "
                           "queued.max.response.bytes, extension answers shrink to one row.",
                           gauge, static_cast<double>(Connection::total_queued_response_memory())));
  if (request_pool_) {
    out.push_back(one_sample("strata_connections_request_bytes",
                             "Request-body bytes the connections hold, read or being read "
                             "(bounded by queued.max.request.bytes).",
                             gauge, static_cast<double>(request_pool_->used())));
    out.push_back(
        one_sample("strata_connections_waiting_for_request_memory",
                   "Connections not reading until handled requests give request-body bytes back.",
                   gauge, static_cast<double>(request_pool_->waiters())));
    out.push_back(one_sample("strata_connections_kept_request_buffer_bytes",
                             "Capacity of the request-body buffers kept for the next requests "
                             "(at most 16 buffers, 32 MiB).",
                             gauge, static_cast<double>(request_pool_->kept_buffer_bytes())));
  }

  struct TopicFamily {
    const char* name;
    const char* help;
    std::atomic<uint64_t> TopicCounters::*field;
    bool pk_only;  // series only for primary-key tables
  };
  static const TopicFamily kTopicFamilies[] = {
      {"strata_topic_bytes_in_total", "Record batch bytes appended by Produce, by topic.",
       &TopicCounters::bytes_in, false},
      {"strata_topic_records_in_total", "Records appended by Produce, by topic.",
       &TopicCounters::records_in, false},
      {"strata_topic_bytes_out_total", "Record batch bytes sent by Fetch, by topic.",
       &TopicCounters::bytes_out, false},
      {"strata_pk_lookups_total",
       "Lookup/PrefixLookup partition requests served on primary-key tables, by topic.",
       &TopicCounters::pk_lookups, true},
      {"strata_pk_lookup_keys_total",
       "Keys looked up on primary-key tables (PrefixLookup: rows returned), by topic.",
       &TopicCounters::pk_keys, true},
      {"strata_pk_rows_applied_total",
       "Changelog records applied to primary-key table states, by topic.",
       &TopicCounters::pk_rows_applied, true},
  };
  for (const auto& tf : kTopicFamilies) {
    auto f = family(tf.name, tf.help, MetricType::Counter);
    f.metric.reserve(topics.size());
    for (const auto& t : topics) {
      if (!t || !t->counters) continue;
      if (tf.pk_only && !pkindex::is_pk_table(t->configs)) continue;
      add_sample(f, {{"topic", t->name}},
                 static_cast<double>(((*t->counters).*(tf.field)).load(std::memory_order_relaxed)));
    }
    out.push_back(std::move(f));
  }
  auto pk_latency = family("strata_pk_lookup_duration_seconds",
                           "Time to serve the keys of one Lookup/PrefixLookup partition request.",
                           MetricType::Histogram);
  pk_latency.metric.emplace_back().histogram = pk_lookup_latency_.snapshot();
  out.push_back(std::move(pk_latency));
  return out;
}

}  // namespace strata::broker::metrics
