// The client-quota throttle core: WindowedRate against a simple model of the windowed rate
// (random record sequences), a client that obeys its throttle converging to the quota, and
// ClientQuotas' enforcement with an injected clock.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "broker/quota/client_quotas.h"
#include "broker/quota/windowed_rate.h"
#include "storage/env.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::quota {
namespace {

// The model: every (time, value) event kept in a list; the rate recomputed from scratch from the
// definition in windowed_rate.h, by filtering events on their window.
struct ModelRate {
  RateConfig cfg;
  int64_t created;
  std::vector<std::pair<int64_t, double>> events;

  int64_t win(int64_t t) const { return t / cfg.window_ms; }
  int64_t lo(int64_t now) const { return std::max(win(created), win(now) - cfg.samples + 1); }
  int64_t elapsed(int64_t now) const {
    return std::max<int64_t>((cfg.samples - 1) * cfg.window_ms, now - lo(now) * cfg.window_ms);
  }
  double rate(int64_t now) const {
    double sum = 0;
    for (auto [t, v] : events) {
      if (win(t) >= lo(now) && win(t) <= win(now)) sum += v;
    }
    return elapsed(now) > 0 ? sum * 1000.0 / static_cast<double>(elapsed(now)) : 0.0;
  }
  int64_t throttle(double quota, int64_t now) const {
    double r = rate(now);
    if (r <= quota) return 0;
    return std::llround((r - quota) / quota * static_cast<double>(elapsed(now)));
  }
};

TEST(WindowedRate, MatchesTheModelOnRandomSequences) {
  std::mt19937_64 rng(20260101);
  for (int round = 0; round < 300; ++round) {
    RateConfig cfg{1 + static_cast<int>(rng() % 12), 1 + static_cast<int64_t>(rng() % 2000)};
    const int64_t start = static_cast<int64_t>(rng() % 100000);
    WindowedRate rate(cfg, start);
    ModelRate model{cfg, start, {}};
    int64_t now = start;
    for (int step = 0; step < 200; ++step) {
      // mostly small steps, sometimes gaps longer than the whole span
      const uint64_t kind = rng() % 10;
      now += kind < 7   ? static_cast<int64_t>(rng() % 50)
             : kind < 9 ? static_cast<int64_t>(rng() % (cfg.window_ms * 2))
                        : static_cast<int64_t>(rng() % (cfg.window_ms * cfg.samples * 3));
      if (rng() % 3 != 0) {
        const double v = static_cast<double>(rng() % 100000);
        rate.record(v, now);
        model.events.emplace_back(now, v);
      }
      const double quota = 1.0 + static_cast<double>(rng() % 200000);
      ASSERT_NEAR(rate.rate(now), model.rate(now), 1e-6 * (1 + model.rate(now)))
          << "round " << round << " step " << step;
      ASSERT_EQ(rate.elapsed_ms(now), model.elapsed(now));
      const int64_t t = rate.throttle_ms(quota, now), mt = model.throttle(quota, now);
      ASSERT_LE(std::llabs(t - mt), 1) << "round " << round << " step " << step;
      // the throttle time is what brings the rate back to the quota if nothing else arrives
      // (when the wait expires no window and the span is past its minimum; +1 ms for rounding)
      const int64_t after = now + t + 1;
      if (t > 0 && model.win(after) == model.win(now) && model.lo(after) == model.lo(now) &&
          model.elapsed(now) == now - model.lo(now) * cfg.window_ms) {
        EXPECT_LE(model.rate(after), quota * (1 + 1e-9));
      }
    }
  }
}

TEST(WindowedRate, NegativeValuesUnrecord) {
  WindowedRate rate({11, 1000}, 0);
  rate.record(5000, 100);
  rate.record(-5000, 200);
  EXPECT_EQ(rate.rate(300), 0.0);
  EXPECT_EQ(rate.throttle_ms(1, 300), 0);
}

TEST(WindowedRate, FreshRateUsesTheMinimumSpan) {
  // 10 windows of 1 s is the minimum span: 10000 bytes at once read as 1000 B/s, not 10000/ms.
  WindowedRate rate({11, 1000}, 0);
  rate.record(10000, 5);
  EXPECT_DOUBLE_EQ(rate.rate(5), 1000.0);
  // quota 500 B/s: wait until 10000 bytes are spread over 20 s → 10 s more
  EXPECT_EQ(rate.throttle_ms(500, 5), 10000);
  EXPECT_EQ(rate.throttle_ms(1000, 5), 0);
}

// A client that sends a request, then waits the throttle time it is given (plus a small think
// time), sustains about the quota, whatever its request size. (A request worth seconds of quota
// overshoots a little: the span is bounded, so windows expire during the computed wait.)
TEST(WindowedRate, ObeyingClientConvergesToTheQuota) {
  for (double req : {1000.0, 20000.0, 150000.0}) {
    const double quota = 50000;
    WindowedRate rate({11, 1000}, 0);
    int64_t now = 0;
    double sent = 0;
    while (now < 600000) {  // long enough for the fresh-rate allowance to wash out
      rate.record(req, now);
      sent += req;
      now += 1 + rate.throttle_ms(quota, now);
    }
    const double achieved = sent * 1000.0 / static_cast<double>(now);
    EXPECT_LT(achieved, quota * (req > quota ? 1.1 : 1.03)) << req;
    EXPECT_GT(achieved, quota * 0.9) << req;
  }
}

// ---- ClientQuotas: enforcement with a fake clock ----

// An unauthenticated client (Kafka's quota user ANONYMOUS) with this client id.
QuotaClient anon(std::string_view client_id) { return {"ANONYMOUS", client_id}; }

struct Fixture {
  storage::testing::TempDir dir;
  int64_t now = 1000000;
  std::unique_ptr<ClientQuotas> quotas;
  Fixture() {
    auto store = QuotaStore::open(storage::default_env(), dir.path());
    EXPECT_TRUE(store.ok());
    quotas = std::make_unique<ClientQuotas>(std::move(*store), RateConfig{11, 1000},
                                            [this] { return now; });
  }
  void set(std::optional<std::string> client, std::string key, std::optional<double> v) {
    QuotaAlteration a;
    a.entity = {{"client-id", std::move(client)}};
    a.ops = {{std::move(key), v}};
    auto st = quotas->alter({a}, false);
    ASSERT_TRUE(st.at(0).ok()) << st[0].to_string();
  }
};

TEST(ClientQuotas, NoQuotaNoThrottleAndNothingTracked) {
  Fixture f;
  EXPECT_EQ(f.quotas->record_produce(anon("a"), 1 << 30), 0);
  EXPECT_EQ(f.quotas->record_fetch(anon("a"), 1 << 30), 0);
  f.quotas->record_request_time(anon("a"), 10'000'000'000);
  EXPECT_EQ(f.quotas->request_throttle(anon("a")), 0);
  EXPECT_EQ(f.quotas->tracked_rates(), 0u);
}

TEST(ClientQuotas, ProducerByteRateThrottlesOnlyThatClient) {
  Fixture f;
  f.set("slow", "producer_byte_rate", 1000);
  EXPECT_EQ(f.quotas->record_produce(anon("slow"), 5000), 0);  // 500 B/s over the 10 s minimum span
  EXPECT_EQ(f.quotas->record_produce(anon("slow"), 10000), 5000);  // 15000 B: 15 s at 1000 B/s
  EXPECT_EQ(f.quotas->record_produce(anon("other"), 1 << 30), 0);
  EXPECT_EQ(f.quotas->record_produce(anon(""), 1 << 30), 0);
  // consumer_byte_rate is independent of producer_byte_rate
  EXPECT_EQ(f.quotas->record_fetch(anon("slow"), 1 << 30), 0);
}

TEST(ClientQuotas, DefaultEntityAppliesPerClientAndExactWins) {
  Fixture f;
  f.set(std::nullopt, "producer_byte_rate", 1000);
  f.set("vip", "producer_byte_rate", 1e9);
  EXPECT_GT(f.quotas->record_produce(anon("a"), 20000), 0);
  EXPECT_GT(f.quotas->record_produce(anon("b"), 20000), 0);  // b has its own rate: also over, alone
  EXPECT_EQ(f.quotas->record_produce(anon("vip"), 20000), 0);
  // a request without a client id is client id "", which the default covers
  EXPECT_GT(f.quotas->record_produce(anon(""), 20000), 0);
}

TEST(ClientQuotas, QuotaChangesApplyToTheNextRequest) {
  Fixture f;
  f.set("c", "producer_byte_rate", 1000);
  EXPECT_GT(f.quotas->record_produce(anon("c"), 20000), 0);
  f.set("c", "producer_byte_rate", 1e6);
  EXPECT_EQ(f.quotas->record_produce(anon("c"), 1), 0);
  f.set("c", "producer_byte_rate", 100);
  EXPECT_GT(f.quotas->record_produce(anon("c"), 1), 0);  // the rate kept running
  f.set("c", "producer_byte_rate", std::nullopt);
  EXPECT_EQ(f.quotas->record_produce(anon("c"), 1 << 30), 0);
}

TEST(ClientQuotas, ThrottledFetchIsUnrecorded) {
  Fixture f;
  f.set("c", "consumer_byte_rate", 1000);
  const int64_t t = f.quotas->record_fetch(anon("c"), 50000);
  EXPECT_GT(t, 0);
  f.quotas->unrecord_fetch(anon("c"), 50000);
  EXPECT_EQ(f.quotas->record_fetch(anon("c"), 5000), 0);  // only 5000 B counted now
}

TEST(ClientQuotas, RequestPercentageIsBoundedByOneWindow) {
  Fixture f;
  f.set("c", "request_percentage", 10);                   // 10 % of one thread
  f.quotas->record_request_time(anon("c"), 500'000'000);  // 0.5 s over a 10 s span = 5 %
  EXPECT_EQ(f.quotas->request_throttle(anon("c")), 0);
  f.quotas->record_request_time(anon("c"), 5'000'000'000);  // 55 %: way over
  EXPECT_EQ(f.quotas->request_throttle(anon("c")), 1000);   // capped at quota.window.size.seconds
  f.now += 60000;  // after a full span the client is forgotten
  EXPECT_EQ(f.quotas->request_throttle(anon("c")), 0);
}

TEST(ClientQuotas, IdleClientsAreForgotten) {
  Fixture f;
  f.set(std::nullopt, "producer_byte_rate", 1e9);
  for (int i = 0; i < 50; ++i) {
    std::string id("c");
    id.append(std::to_string(i));
    f.quotas->record_produce(anon(id), 10);
  }
  EXPECT_EQ(f.quotas->tracked_rates(), 50u);
  f.now += 12000;
  f.quotas->record_produce(anon("last"), 10);
  EXPECT_EQ(f.quotas->tracked_rates(), 1u);
}

}  // namespace
}  // namespace strata::broker::quota
