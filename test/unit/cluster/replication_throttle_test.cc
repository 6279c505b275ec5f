// The follower-side replication throttle (broker/cluster/replication_throttle.h): unlimited at -1,
// one second's worth of burst, then an average no higher than the rate, and a rate change taking
// effect at the next call.
#include "broker/cluster/replication_throttle.h"

#include <gtest/gtest.h>

#include <atomic>

namespace strata::broker::cluster {
namespace {

TEST(ReplicationThrottle, UnlimitedNeverDelays) {
  ReplicationThrottle t([] { return int64_t{-1}; });
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(t.delay_ms(i), 0);
    t.record(1 << 20, i);
  }
  EXPECT_EQ(t.throttled_bytes(), 100u << 20);
}

TEST(ReplicationThrottle, HoldsTheAverageRate) {
  std::atomic<int64_t> rate{1000};
  ReplicationThrottle t([&] { return rate.load(); });
  // Fetch 400 bytes whenever allowed, for 10 simulated seconds.
  uint64_t fetched = 0;
  for (int64_t now = 0; now < 10000;) {
    const int64_t d = t.delay_ms(now);
    if (d > 0) {
      now += d;
      continue;
    }
    t.record(400, now);
    fetched += 400;
    now += 1;
  }
  // One second of burst plus the rate over ten seconds, give or take one answer.
  EXPECT_LE(fetched, 1000u + 10000u + 400u);
  EXPECT_GE(fetched, 10000u - 400u);

  rate = -1;
  EXPECT_EQ(t.delay_ms(10000), 0) << "lifting the throttle applies at once";
  rate = 0;
  t.record(1, 10001);
  EXPECT_GT(t.delay_ms(10002), 0) << "rate 0 lets nothing through";
}

}  // namespace
}  // namespace strata::broker::cluster
