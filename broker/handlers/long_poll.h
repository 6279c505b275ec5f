// LongPoll<Request>: the wait loop shared by the long-polling requests (Fetch, ReadChangelog).
// A request reads its partitions; when it has nothing worth answering yet it names the partitions
// it waits on and the high watermarks (or, for a follower, log ends) it saw, and run() registers
// one PartitionWatchers watch (woken by such an advance, or at once when one moved past what was
// seen) plus one deadline timer for max_wait_ms. Every wake-up re-runs the read until the request
// answers.
//
// `Request` (CRTP) implements `bool attempt(bool out_of_time, WaitOn& wait)`: build the response;
// when it is ready, or `out_of_time`, or `wait.logs` stayed empty, send it and return true;
// otherwise fill `wait` and return false. Owned by shared_ptr (the watch and the timer hold it
// while waiting; both references are dropped when it answers). Thread-safe: run() serialises on
// a mutex; wake-ups and the deadline run on the request's connection strand (its I/O thread), so
// the answer is written from there without another hand-off.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "broker/net/asio.h"
#include "broker/services.h"
#include "broker/topics/partition_watchers.h"
#include "broker/topics/topic_registry.h"

namespace strata::broker {

// What an unanswered attempt waits on: partition logs and the high watermark read from each, or
// (a follower's fetch, which reads beyond the high watermark) the log end read from it.
struct WaitOn {
  std::vector<const storage::PartitionLog*> logs;
  std::vector<int64_t> seen_hw;
  std::vector<int64_t> seen_end;  // -1: woken by the high watermark
  void add(const storage::PartitionLog* log, int64_t hw) {
    logs.push_back(log);
    seen_hw.push_back(hw);
    seen_end.push_back(-1);
  }
  // Woken once the log end is no longer `end`.
  void add_log_end(const storage::PartitionLog* log, int64_t hw, int64_t end) {
    logs.push_back(log);
    seen_hw.push_back(hw);
    seen_end.push_back(end);
  }
};

template <typename Request>
class LongPoll : public std::enable_shared_from_this<Request> {
 public:
  // Reads, and answers or (re)arms the wait.
  void run(bool timed_out) {
    std::lock_guard lk(mu_);
    if (done_) return;
    const bool out_of_time = timed_out || svc_.stopping() || max_wait_ms_ <= 0 ||
                             std::chrono::steady_clock::now() >= deadline_;
    WaitOn wait;
    if (static_cast<Request*>(this)->attempt(out_of_time, wait)) {
      done_ = true;
      timer_.cancel();
      watch_.reset();  // an unfired watch's wake function holds this request: break the cycle
      return;
    }
    auto self = this->shared_from_this();
    watch_ = svc_.watchers.watch_logs(
        wait.logs, wait.seen_hw,
        [self] { boost::asio::post(self->timer_.get_executor(), [self] { self->run(false); }); },
        wait.seen_end);
    if (!timer_armed_) {
      timer_armed_ = true;
      timer_.expires_at(deadline_);
      timer_.async_wait([self](boost::system::error_code ec) {
        if (!ec) self->run(true);
      });
    }
  }

 protected:
  // `executor`: the request's connection strand (Responder::executor()).
  LongPoll(Services& svc, boost::asio::any_io_executor executor, int32_t max_wait_ms)
      : svc_(svc),
        max_wait_ms_(max_wait_ms),
        timer_(std::move(executor)),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(std::max(0, max_wait_ms))) {}

 private:
  Services& svc_;
  const int32_t max_wait_ms_;
  boost::asio::steady_timer timer_;
  const std::chrono::steady_clock::time_point deadline_;
  std::mutex mu_;
  bool done_ = false;
  bool timer_armed_ = false;
  std::shared_ptr<PartitionWatchers::Watch> watch_;
};

}  // namespace strata::broker
