// ClientQuotas: the broker's client-quota service — the durable QuotaStore plus the per-client-id
// rates the quotas are enforced on, and the throttle time each request earns (Kafka's
// ClientQuotaManager / ClientRequestQuotaManager, KIP-13/124/219):
//   producer_byte_rate   Produce request bytes per second
//   consumer_byte_rate   Fetch response bytes per second (a throttled Fetch is answered empty and
//                        its bytes are taken back out of the rate, as Kafka does)
//   request_percentage   request-handler time per second, in percent of one thread (every API,
//                        the extension APIs 16000+ included); its throttle is capped at one window
// A quota change applies to the next request (the rates keep running). While no entity sets a
// key, requests cost nothing for it. Idle clients' rates are dropped after a full window span.
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
#include <unordered_map>

#include "broker/quota/quota_store.h"
#include "broker/quota/windowed_rate.h"

namespace strata::broker::quota {

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
  int64_t record_produce(const std::optional<std::string>& client_id, int64_t bytes);
  // Records a Fetch response's bytes; returns the throttle time. When it is > 0 the caller sends
  // an empty response instead and calls unrecord_fetch() with the same bytes.
  int64_t record_fetch(const std::optional<std::string>& client_id, int64_t bytes);
  void unrecord_fetch(const std::optional<std::string>& client_id, int64_t bytes);
  // The most a Fetch of this client may return (its consumer_byte_rate over the minimum span),
  // 0 = no bound: a larger answer would always be over the quota and never be sent (Kafka caps
  // the request's max_bytes the same way).
  int64_t fetch_window_bytes(const std::optional<std::string>& client_id) const;
  // Records request-handler time (ns) for request_percentage.
  void record_request_time(const std::optional<std::string>& client_id, int64_t nanos);
  // The request_percentage throttle the client has earned so far (0 = none).
  int64_t request_throttle(const std::optional<std::string>& client_id);

  // Clients with live rates (tests, metrics).
  size_t tracked_clients() const;

 private:
  enum Kind { kProduce = 0, kFetch = 1, kRequest = 2 };
  struct Rates {
    explicit Rates(RateConfig cfg, int64_t now)
        : rate{WindowedRate(cfg, now), WindowedRate(cfg, now), WindowedRate(cfg, now)},
          last_ms(now) {}
    WindowedRate rate[3];
    int64_t last_ms = 0;
  };
  static std::string_view key_of(Kind k);
  // Records `value` on the client's `kind` rate (if that quota is in use) and returns the
  // throttle against the client's quota (0 without one).
  int64_t record(Kind kind, const std::optional<std::string>& client_id, double value,
                 bool throttle);
  void refresh_enabled();
  void sweep(int64_t now);  // mu_ held

  std::unique_ptr<QuotaStore> store_;
  const RateConfig cfg_;
  const Clock clock_;
  std::atomic<bool> enabled_[3] = {false, false, false};
  mutable std::mutex mu_;
  std::unordered_map<std::string, Rates> clients_;
  int64_t last_sweep_ms_ = 0;
};

}  // namespace strata::broker::quota
