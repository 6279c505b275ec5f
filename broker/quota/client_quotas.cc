// ClientQuotas (see client_quotas.h).
#include "broker/quota/client_quotas.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace strata::broker::quota {

int64_t ClientQuotas::steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ClientQuotas::ClientQuotas(std::unique_ptr<QuotaStore> store, RateConfig rate, Clock clock)
    : store_(std::move(store)), cfg_(rate), clock_(std::move(clock)) {
  refresh_enabled();
}

std::string_view ClientQuotas::key_of(Kind k) {
  switch (k) {
    case kProduce:
      return kProducerByteRate;
    case kFetch:
      return kConsumerByteRate;
    case kRequest:
      break;
  }
  return kRequestPercentage;
}

void ClientQuotas::refresh_enabled() {
  for (Kind k : {kProduce, kFetch, kRequest}) enabled_[k].store(store_->any(key_of(k)));
}

std::vector<Status> ClientQuotas::alter(const std::vector<QuotaAlteration>& alterations,
                                        bool validate_only) {
  auto out = store_->alter(alterations, validate_only);
  refresh_enabled();
  return out;
}

void ClientQuotas::sweep(int64_t now) {
  const int64_t span = cfg_.window_ms * cfg_.samples;
  if (now - last_sweep_ms_ < span) return;
  last_sweep_ms_ = now;
  // A client silent for a whole span has rate 0 everywhere: forgetting it changes nothing.
  for (auto it = clients_.begin(); it != clients_.end();) {
    it = now - it->second.last_ms > span ? clients_.erase(it) : std::next(it);
  }
}

int64_t ClientQuotas::record(Kind kind, const std::optional<std::string>& client_id, double value,
                             bool throttle) {
  if (!enabled_[kind].load(std::memory_order_relaxed)) return 0;
  const std::string& id = client_id ? *client_id : std::string();
  const std::optional<double> quota = store_->resolve(id, key_of(kind));
  if (!quota) return 0;  // nobody limits this client for this key: nothing to measure
  const int64_t now = clock_();
  std::lock_guard lk(mu_);
  sweep(now);
  auto it = clients_.try_emplace(id, cfg_, now).first;
  Rates& r = it->second;
  if (value != 0) {
    r.rate[kind].record(value, now);
    r.last_ms = std::max(r.last_ms, now);
  }
  if (!throttle) return 0;
  int64_t t = r.rate[kind].throttle_ms(*quota, now);
  if (kind == kRequest) t = std::min(t, cfg_.window_ms);  // Kafka bounds request throttles
  return t;
}

int64_t ClientQuotas::record_produce(const std::optional<std::string>& client_id, int64_t bytes) {
  return record(kProduce, client_id, static_cast<double>(bytes), true);
}

int64_t ClientQuotas::record_fetch(const std::optional<std::string>& client_id, int64_t bytes) {
  return record(kFetch, client_id, static_cast<double>(bytes), true);
}

void ClientQuotas::unrecord_fetch(const std::optional<std::string>& client_id, int64_t bytes) {
  record(kFetch, client_id, -static_cast<double>(bytes), false);
}

int64_t ClientQuotas::fetch_window_bytes(const std::optional<std::string>& client_id) const {
  if (!enabled_[kFetch].load(std::memory_order_relaxed)) return 0;
  const auto quota = store_->resolve(client_id ? *client_id : std::string(), kConsumerByteRate);
  if (!quota) return 0;
  const double span_s = static_cast<double>(std::max(1, cfg_.samples - 1) * cfg_.window_ms) / 1000;
  return std::max<int64_t>(1, std::llround(std::min(*quota * span_s, 9.0e18)));
}

void ClientQuotas::record_request_time(const std::optional<std::string>& client_id, int64_t nanos) {
  // percent of one thread: 1 s of handler time per second = 100
  record(kRequest, client_id, static_cast<double>(nanos) * 100.0 / 1e9, false);
}

int64_t ClientQuotas::request_throttle(const std::optional<std::string>& client_id) {
  return record(kRequest, client_id, 0, true);
}

size_t ClientQuotas::tracked_clients() const {
  std::lock_guard lk(mu_);
  return clients_.size();
}

}  // namespace strata::broker::quota
