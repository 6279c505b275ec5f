// ClientQuotas: the broker's client-quota service — the durable QuotaStore plus the rates the
// quotas are enforced on, and the throttle time each request earns (Kafka's ClientQuotaManager /
// ClientRequestQuotaManager, KIP-13/55/124/219):
//   producer_byte_rate   Produce request bytes per second
//   consumer_byte_rate   Fetch response bytes per second (a throttled Fetch is answered empty and
//                        its bytes are taken back out of the rate, as Kafka does)
//   request_percentage   request-handler time per second, in percent of one thread (every API,
//                        the extension APIs 16000+ included); its throttle is capped at one window
// Who shares a rate follows the level of the entity whose value applies (QuotaStore::resolve),
// as Kafka's metric tags do: a user+client-id level (named or default parts) → one rate per
// (user, client id) pair; a user level (user=NAME or user=<default>) → one rate per user, shared
// by all its client ids; a client-id level → one rate per client id, shared by all users of it.
// So user=<default> limits each user separately, never all users together.
// A quota change applies to the next request (the rates keep running; a change of level starts
// a new rate, as Kafka's new sensor does). While no entity sets a key, requests cost nothing for
// it. Idle rates are dropped after a full window span.
//
// Owned by Broker; thread-safe (one mutex around the rates, the store locks itself). The clock is
// injected (steady milliseconds by default) so the throttle arithmetic is unit-testable.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "broker/quota/quota_store.h"
#include "broker/quota/windowed_rate.h"

namespace strata::broker::quota {

// Who a request counts against: Kafka's quota user (the principal's name) and the client id
// ("" when the request has none). Views: valid for the call only.
struct QuotaClient {
  std::string_view user;
  std::string_view client_id;
};
// Kafka's quota user of a principal: its name ("User:alice" → "alice", "User:ANONYMOUS" →
// "ANONYMOUS").
std::string_view quota_user(std::string_view principal);

class ClientQuotas {
 public:
  using Clock = std::function<int64_t()>;  // milliseconds, monotonic
  static int64_t steady_ms();

  ClientQuotas(std::unique_ptr<QuotaStore> store, RateConfig rate, Clock clock = steady_ms);

  QuotaStore& store() { return *store_; }
  const QuotaStore& store() const { return *store_; }
  // AlterClientQuotas: store().alter(), then the enabled flags follow the new configuration.
  std::vector<Status> alter(const std::vector<QuotaAlteration>& alterations, bool validate_only);

  // Records a Produce request's bytes; returns the throttle time it earned (0 = none).
  int64_t record_produce(const QuotaClient& c, int64_t bytes);
  // Records a Fetch response's bytes; returns the throttle time. When it is > 0 the caller sends
  // an empty response instead and calls unrecord_fetch() with the same bytes.
  int64_t record_fetch(const QuotaClient& c, int64_t bytes);
  void unrecord_fetch(const QuotaClient& c, int64_t bytes);
  // The most a Fetch of this client may return (its consumer_byte_rate over the minimum span),
  // 0 = no bound: a larger answer would always be over the quota and never be sent (Kafka caps
  // the request's max_bytes the same way).
  int64_t fetch_window_bytes(const QuotaClient& c) const;
  // Records request-handler time (ns) for request_percentage.
  void record_request_time(const QuotaClient& c, int64_t nanos);
  // The request_percentage throttle the client has earned so far (0 = none).
  int64_t request_throttle(const QuotaClient& c);

  // Live rates (one per quota key and sharing group; tests).
  size_t tracked_rates() const;

 private:
  enum Kind { kProduce = 0, kFetch = 1, kRequest = 2 };
  struct Rate {
    Rate(RateConfig cfg, int64_t now) : rate(cfg, now), last_ms(now) {}
    WindowedRate rate;
    int64_t last_ms = 0;
  };
  static std::string_view key_of(Kind k);
  // Records `value` on the rate the client's `kind` quota is measured on (if it has one) and
  // returns the throttle against that quota (0 without one).
  int64_t record(Kind kind, const QuotaClient& c, double value, bool throttle);
  void refresh_enabled();
  void sweep(int64_t now);  // mu_ held

  std::unique_ptr<QuotaStore> store_;
  const RateConfig cfg_;
  const Clock clock_;
  std::atomic<bool> enabled_[3] = {false, false, false};
  mutable std::mutex mu_;
  // keyed by rate_key(): the kind and the sharing group (user and/or client id)
  std::unordered_map<std::string, Rate> rates_;
  int64_t last_sweep_ms_ = 0;
};

}  // namespace strata::broker::quota
