// PrefixFollower on the in-memory coordination: the first read and the watched puts and deletions
// reach the handlers (only keys under the prefix); a compaction under the watch makes it read
// everything again (retrying while etcd cannot be read) and then keep following; wait_for gives up
// after its timeout when nothing arrives; stop() ends the re-read loop promptly and no handler
// runs after it.
#include "broker/cluster/prefix_follower.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "test/unit/cluster/fake_coordination.h"

namespace strata::broker::cluster {
namespace {

using namespace std::chrono_literals;

// The fake, with a step run before its first watch() (to write and compact meanwhile, as a watch
// resuming after a long outage would find) and a number of range() calls that fail.
class ScriptedEtcd : public FakeCoordination {
 public:
  std::function<void()> before_first_watch;
  std::atomic<int> failing_ranges{0};
  std::atomic<int> ranges{0};

  Result<RangeResult> range(const std::string& key, const std::string& range_end) override {
    ++ranges;
    if (failing_ranges > 0) {
      --failing_ranges;
      return Status(Errc::io_error, "etcd unreachable");
    }
    return FakeCoordination::range(key, range_end);
  }
  Result<std::unique_ptr<Watch>> watch(const std::string& key, const std::string& range_end,
                                       int64_t start_revision, WatchFn fn) override {
    if (watches_++ == 0 && before_first_watch) before_first_watch();
    return FakeCoordination::watch(key, range_end, start_revision, std::move(fn));
  }

 private:
  std::atomic<int> watches_{0};
};

// What a follower's user keeps: the copy, and how often each handler ran.
struct Copy {
  mutable std::mutex mu;
  std::map<std::string, std::string> kvs;
  int resets = 0;
  int batches = 0;

  PrefixFollower::Handlers handlers(const PrefixFollower** follower) {
    PrefixFollower::Handlers h;
    h.reset = [this, follower](const RangeResult& all) {
      std::lock_guard lk(mu);
      kvs.clear();
      for (const auto& kv : all.kvs) kvs[std::string((*follower)->relative(kv.key))] = kv.value;
      ++resets;
    };
    h.apply = [this, follower](const std::vector<WatchEvent>& events) {
      std::lock_guard lk(mu);
      for (const auto& e : events) {
        const std::string k((*follower)->relative(e.kv.key));
        if (e.type == WatchEvent::Type::put) {
          kvs[k] = e.kv.value;
        } else {
          kvs.erase(k);
        }
      }
      ++batches;
    };
    return h;
  }
  std::map<std::string, std::string> snapshot() const {
    std::lock_guard lk(mu);
    return kvs;
  }
  int reset_count() const {
    std::lock_guard lk(mu);
    return resets;
  }
  int batch_count() const {
    std::lock_guard lk(mu);
    return batches;
  }
};

// A follower of "/p/" over `etcd` feeding `copy`.
struct Followed {
  Followed(Coordination& etcd, Copy& copy) : f(etcd, "/p/", copy.handlers(&self), "test") {}
  const PrefixFollower* self = &f;
  PrefixFollower f;
};

template <typename F>
bool eventually(F f) {
  for (int i = 0; i < 500; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

using Map = std::map<std::string, std::string>;

TEST(PrefixFollower, ReadsThePrefixThenFollowsPutsAndDeletions) {
  FakeCoordination etcd;
  ASSERT_TRUE(etcd.put("/p/a", "1").ok());
  ASSERT_TRUE(etcd.put("/p/b", "2").ok());
  ASSERT_TRUE(etcd.put("/q/x", "other").ok());
  Copy copy;
  Followed followed(etcd, copy);
  ASSERT_TRUE(followed.f.start().ok());
  EXPECT_EQ(copy.snapshot(), (Map{{"a", "1"}, {"b", "2"}})) << "only keys under the prefix";
  EXPECT_EQ(copy.reset_count(), 1);
  EXPECT_EQ(followed.f.applied_revision(), etcd.revision());

  ASSERT_TRUE(etcd.put("/p/c", "3").ok());
  ASSERT_TRUE(etcd.delete_range("/p/a").ok());
  ASSERT_TRUE(etcd.put("/pz", "not under /p/").ok());
  auto last = etcd.put("/p/b", "2'");
  ASSERT_TRUE(last.ok());
  ASSERT_TRUE(followed.f.wait_for(*last, 5000ms));
  EXPECT_EQ(copy.snapshot(), (Map{{"b", "2'"}, {"c", "3"}}));
  EXPECT_EQ(copy.reset_count(), 1) << "no re-read without a compaction";
  EXPECT_GE(copy.batch_count(), 1);
  EXPECT_EQ(followed.f.relative("/q/x"), "");
}

TEST(PrefixFollower, ReReadsAfterACompactionRetryingWhileEtcdIsDownThenKeepsFollowing) {
  ScriptedEtcd etcd;
  ASSERT_TRUE(etcd.put("/p/a", "1").ok());
  etcd.before_first_watch = [&] {
    ASSERT_TRUE(etcd.put("/p/late", "2").ok());
    ASSERT_TRUE(etcd.delete_range("/p/a").ok());
    ASSERT_TRUE(etcd.compact(etcd.revision()).ok());
    etcd.failing_ranges = 2;  // the first two re-reads fail
  };
  Copy copy;
  Followed followed(etcd, copy);
  ASSERT_TRUE(followed.f.start().ok());
  EXPECT_TRUE(eventually([&] {
    return copy.snapshot() == Map{{"late", "2"}};
  })) << "the compaction ended the first watch: everything is read again";
  EXPECT_EQ(copy.reset_count(), 2);
  EXPECT_EQ(etcd.ranges.load(), 4) << "the first read, two failed re-reads, one that worked";
  EXPECT_TRUE(followed.f.wait_for(etcd.revision(), 1000ms));

  auto rev = etcd.put("/p/after", "3");
  ASSERT_TRUE(rev.ok());
  ASSERT_TRUE(followed.f.wait_for(*rev, 5000ms)) << "the new watch follows";
  EXPECT_EQ(copy.snapshot(), (Map{{"after", "3"}, {"late", "2"}}));
}

TEST(PrefixFollower, WaitForGivesUpWhenNothingArrives) {
  FakeCoordination etcd;
  Copy copy;
  Followed followed(etcd, copy);
  ASSERT_TRUE(followed.f.start().ok());
  const int64_t now = followed.f.applied_revision();
  EXPECT_TRUE(followed.f.wait_for(now, 0ms)) << "a revision already reflected";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(followed.f.wait_for(now + 5, 200ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 200ms);
  EXPECT_EQ(followed.f.applied_revision(), now);
}

TEST(PrefixFollower, StopEndsTheReReadLoopAndNoHandlerRunsAfter) {
  ScriptedEtcd etcd;
  etcd.before_first_watch = [&] {
    ASSERT_TRUE(etcd.put("/p/a", "1").ok());
    ASSERT_TRUE(etcd.put("/p/a", "2").ok());  // the watch's start revision is now compacted
    ASSERT_TRUE(etcd.compact(etcd.revision()).ok());
    etcd.failing_ranges = 1000000;  // etcd stays down: the re-read retries, backing off
  };
  Copy copy;
  Followed followed(etcd, copy);
  ASSERT_TRUE(followed.f.start().ok());
  EXPECT_TRUE(eventually([&] { return etcd.ranges >= 4; })) << "re-reads retried";
  const auto t0 = std::chrono::steady_clock::now();
  followed.f.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms) << "stop wakes a backoff";
  const int ranges = etcd.ranges;
  etcd.failing_ranges = 0;
  ASSERT_TRUE(etcd.put("/p/b", "3").ok());
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(etcd.ranges.load(), ranges) << "no re-read after stop()";
  EXPECT_EQ(copy.reset_count(), 1);
  EXPECT_EQ(copy.batch_count(), 0);
  EXPECT_TRUE(copy.snapshot().empty());
  followed.f.stop();  // idempotent
  EXPECT_FALSE(followed.f.start().ok()) << "once only";
}

TEST(PrefixFollower, StopEndsTheWatch) {
  FakeCoordination etcd;
  Copy copy;
  Followed followed(etcd, copy);
  ASSERT_TRUE(followed.f.start().ok());
  followed.f.stop();
  ASSERT_TRUE(etcd.put("/p/a", "1").ok());
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(copy.batch_count(), 0);
  EXPECT_TRUE(copy.snapshot().empty());
}

}  // namespace
}  // namespace strata::broker::cluster
