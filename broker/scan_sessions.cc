// ScanSessions (see scan_sessions.h).
#include "broker/scan_sessions.h"

#include <chrono>
#include <random>
#include <vector>

namespace strata::broker {

int64_t ScanSessions::clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ScanSessions::ScanSessions(boost::asio::io_context& io, int64_t timeout_ms, size_t max_sessions)
    : timer_(io),
      timeout_ms_(timeout_ms),
      max_sessions_(std::max<size_t>(1, max_sessions)),
      // A random start makes a cursor from an earlier broker run unlikely to name a live session.
      next_id_((std::random_device{}() & 0xffffffffull) << 20 | 1) {}

ScanSessions::~ScanSessions() { clear(); }

void ScanSessions::start() { schedule_sweep(); }

void ScanSessions::stop() {
  std::lock_guard lk(mu_);
  stopped_ = true;
  timer_.cancel();
}

void ScanSessions::schedule_sweep() {
  std::lock_guard lk(mu_);
  if (stopped_) return;
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;
    Dropped dropped;  // destroyed after mu_ is released (see erase_locked)
    {
      std::lock_guard lk2(mu_);
      if (stopped_) return;
      expire_locked(clock_ms(), dropped);
    }
    dropped.clear();
    schedule_sweep();
  });
}

std::shared_ptr<ScanSessions::Session> ScanSessions::open(
    std::string topic, std::string topic_id, int32_t partition,
    std::shared_ptr<pkindex::PkState> state,
    std::shared_ptr<pkindex::PkSnapshot> snapshot, int64_t now_ms) {
  auto s = std::make_shared<Session>();
  s->topic = std::move(topic);
  s->topic_id = std::move(topic_id);
  s->partition = partition;
  s->state = std::move(state);
  s->snapshot = std::move(snapshot);
  Dropped dropped;  // declared before the lock: destroyed after it is released
  std::lock_guard lk(mu_);
  expire_locked(now_ms, dropped);
  while (sessions_.size() >= max_sessions_ && !lru_.empty()) {
    erase_locked(sessions_.find(lru_.front()), dropped);
  }
  s->id = next_id_++;
  lru_.push_back(s->id);
  sessions_.emplace(s->id, Entry{s, now_ms, std::prev(lru_.end())});
  return s;
}

std::shared_ptr<ScanSessions::Session> ScanSessions::find(uint64_t id, int64_t now_ms) {
  Dropped dropped;
  std::lock_guard lk(mu_);
  expire_locked(now_ms, dropped);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return nullptr;
  it->second.last_used_ms = now_ms;
  lru_.splice(lru_.end(), lru_, it->second.lru);
  return it->second.session;
}

void ScanSessions::close(uint64_t id) {
  Dropped dropped;
  std::lock_guard lk(mu_);
  auto it = sessions_.find(id);
  if (it != sessions_.end()) erase_locked(it, dropped);
}

size_t ScanSessions::expire(int64_t now_ms) {
  Dropped dropped;
  std::lock_guard lk(mu_);
  return expire_locked(now_ms, dropped);
}

size_t ScanSessions::expire_locked(int64_t now_ms, Dropped& dropped) {
  size_t n = 0;
  // lru_ is ordered by last use, so expired sessions are at the front.
  while (!lru_.empty()) {
    auto it = sessions_.find(lru_.front());
    if (now_ms - it->second.last_used_ms < timeout_ms_) break;
    erase_locked(it, dropped);
    ++n;
  }
  return n;
}

void ScanSessions::erase_locked(std::unordered_map<uint64_t, Entry>::iterator it,
                                Dropped& dropped) {
  // The last reference to a session may be this one: its PkSnapshot's destructor takes the
  // snapshot registry exclusively and waits for running page scans, so it must run after mu_ is
  // released (callers destroy `dropped` after unlocking), never under it.
  dropped.push_back(std::move(it->second.session));
  lru_.erase(it->second.lru);
  sessions_.erase(it);
}

void ScanSessions::clear() {
  std::unordered_map<uint64_t, Entry> dropped;
  {
    std::lock_guard lk(mu_);
    dropped.swap(sessions_);
    lru_.clear();
  }
}

size_t ScanSessions::size() const {
  std::lock_guard lk(mu_);
  return sessions_.size();
}

}  // namespace strata::broker
