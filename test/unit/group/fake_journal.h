// An in-memory GroupJournal for the coordinator unit tests: partitions are vectors of records,
// appends are written at once and completed on drain() (the real journal completes later, on an
// I/O thread, once the in-sync replicas have the batch), loads run on drain() too.
// Single-threaded.
#pragma once

#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "broker/group/group_journal.h"

namespace strata::broker::group::testing {

class FakeJournal : public GroupJournal {
 public:
  explicit FakeJournal(int32_t partitions) : logs_(static_cast<size_t>(partitions)) {}

  int32_t partitions() const override {
    ++partitions_asked;
    return static_cast<int32_t>(logs_.size());
  }
  bool partitions_fixed() const override { return fixed; }
  size_t max_write_bytes() const override { return max_write; }
  // Another partition count (an offsets topic not created yet follows the broker's setting).
  void resize(int32_t partitions) { logs_.resize(static_cast<size_t>(partitions)); }
  void append(int32_t partition, std::vector<JournalRecord> records, AppendDone done) override {
    ++appends;
    size_t bytes = 0;
    for (const auto& r : records) bytes += encoded_bound(r);
    // As the real journal: a write over the batch limit is refused whole.
    const auto e =
        bytes > max_write ? protocol::ErrorCode::invalid_commit_offset_size : fail_appends_with;
    if (e != protocol::ErrorCode::none) {
      queued_.push_back([done = std::move(done), e] { done(e, -1); });
      return;
    }
    auto& log = logs_[static_cast<size_t>(partition)];
    for (auto& r : records) log.push_back(std::move(r));
    const auto last = static_cast<int64_t>(log.size()) - 1;
    queued_.push_back([done = std::move(done), last] { done(protocol::ErrorCode::none, last); });
  }
  Status replay(int32_t partition, const std::function<Status(const JournalRecord&)>& fn) override {
    ++replays;
    for (const auto& r : logs_[static_cast<size_t>(partition)]) STRATA_RETURN_IF_ERROR(fn(r));
    return Status::Ok();
  }
  void run_async(std::function<void()> fn) override { queued_.push_back(std::move(fn)); }

  // Runs queued completions and loads (and what they queue) in order.
  void drain() {
    while (!queued_.empty()) {
      auto fn = std::move(queued_.front());
      queued_.pop_front();
      fn();
    }
  }
  // Completes the queued work newest first (completions arriving out of order).
  void drain_reversed() {
    std::deque<std::function<void()>> q;
    q.swap(queued_);
    while (!q.empty()) {
      auto fn = std::move(q.back());
      q.pop_back();
      fn();
    }
    drain();
  }
  size_t queued() const { return queued_.size(); }
  const std::vector<JournalRecord>& log(int32_t p) const { return logs_[static_cast<size_t>(p)]; }

  protocol::ErrorCode fail_appends_with = protocol::ErrorCode::none;
  bool fixed = true;
  size_t max_write = std::numeric_limits<size_t>::max();
  mutable int partitions_asked = 0;
  int appends = 0;
  int replays = 0;

 private:
  std::vector<std::vector<JournalRecord>> logs_;
  std::deque<std::function<void()>> queued_;
};

}  // namespace strata::broker::group::testing
