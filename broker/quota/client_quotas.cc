// ClientQuotas (see client_quotas.h).
#include "broker/quota/client_quotas.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace strata::broker::quota {
namespace {

// Which rate a client's quota of `level` is measured on (Kafka's metric tags user / client-id):
// the kind, then the user (or '-' when not part of it), then the client id (likewise). The user
// is length-prefixed so that no two groups share a key.
std::string rate_key(int kind, QuotaLevel level, const QuotaClient& c) {
  using L = QuotaLevel;
  const bool by_user = level != L::client && level != L::default_client;
  const bool by_client = level != L::user && level != L::default_user;
  std::string k;
  k.reserve(c.user.size() + c.client_id.size() + 16);
  k += static_cast<char>('0' + kind);
  if (by_user) {
    k += 'u';
    k += std::to_string(c.user.size());
    k += ':';
    k += c.user;
  } else {
    k += '-';
  }
  if (by_client) {
    k += 'c';
    k += c.client_id;
  } else {
    k += '-';
  }
  return k;
}

}  // namespace

std::string_view quota_user(std::string_view principal) {
  // KafkaPrincipal "type:name"; the quota user is the name
  const auto colon = principal.find(':');
  return colon == std::string_view::npos ? principal : principal.substr(colon + 1);
}

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
  for (auto it = rates_.begin(); it != rates_.end();) {
    it = now - it->second.last_ms > span ? rates_.erase(it) : std::next(it);
  }
}

int64_t ClientQuotas::record(Kind kind, const QuotaClient& c, double value, bool throttle) {
  if (!enabled_[kind].load(std::memory_order_relaxed)) return 0;
  const auto quota = store_->resolve(c.user, c.client_id, key_of(kind));
  if (!quota) return 0;  // nobody limits this client for this key: nothing to measure
  const std::string key = rate_key(kind, quota->level, c);
  const int64_t now = clock_();
  std::lock_guard lk(mu_);
  sweep(now);
  Rate& r = rates_.try_emplace(key, cfg_, now).first->second;
  if (value != 0) {
    r.rate.record(value, now);
    r.last_ms = std::max(r.last_ms, now);
  }
  if (!throttle) return 0;
  int64_t t = r.rate.throttle_ms(quota->value, now);
  if (kind == kRequest) t = std::min(t, cfg_.window_ms);  // Kafka bounds request throttles
  return t;
}

int64_t ClientQuotas::record_produce(const QuotaClient& c, int64_t bytes) {
  return record(kProduce, c, static_cast<double>(bytes), true);
}

int64_t ClientQuotas::record_fetch(const QuotaClient& c, int64_t bytes) {
  return record(kFetch, c, static_cast<double>(bytes), true);
}

void ClientQuotas::unrecord_fetch(const QuotaClient& c, int64_t bytes) {
  record(kFetch, c, -static_cast<double>(bytes), false);
}

int64_t ClientQuotas::fetch_window_bytes(const QuotaClient& c) const {
  if (!enabled_[kFetch].load(std::memory_order_relaxed)) return 0;
  const auto quota = store_->resolve(c.user, c.client_id, kConsumerByteRate);
  if (!quota) return 0;
  const double span_s = static_cast<double>(std::max(1, cfg_.samples - 1) * cfg_.window_ms) / 1000;
  return std::max<int64_t>(1, std::llround(std::min(quota->value * span_s, 9.0e18)));
}

void ClientQuotas::record_request_time(const QuotaClient& c, int64_t nanos) {
  // percent of one thread: 1 s of handler time per second = 100
  record(kRequest, c, static_cast<double>(nanos) * 100.0 / 1e9, false);
}

int64_t ClientQuotas::request_throttle(const QuotaClient& c) {
  return record(kRequest, c, 0, true);
}

size_t ClientQuotas::tracked_rates() const {
  std::lock_guard lk(mu_);
  return rates_.size();
}

}  // namespace strata::broker::quota
