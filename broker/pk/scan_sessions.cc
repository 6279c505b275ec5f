// ScanSessions (see scan_sessions.h).
#include "broker/pk/scan_sessions.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <system_error>
#include <vector>

namespace strata::broker {

namespace {
// Fills `buf` from /dev/urandom; false on any failure.
bool read_urandom(uint8_t* buf, size_t len) {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::read(fd, buf + got, len - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return got == len;
}
}  // namespace

ScanSessions::SessionId ScanSessions::random_id() {
  SessionId id;
  size_t got = 0;
  while (got < id.size()) {
    // Blocks only until the kernel's pool is first initialised (long before a broker serves).
    ssize_t n = ::getrandom(id.data() + got, id.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == ENOSYS) {  // a kernel older than 3.17
      if (read_urandom(id.data(), id.size())) return id;
      throw std::system_error(errno, std::generic_category(), "reading /dev/urandom");
    }
    if (n < 0) throw std::system_error(errno, std::generic_category(), "getrandom");
    got += static_cast<size_t>(n);
  }
  return id;
}

size_t ScanSessions::IdHash::operator()(const SessionId& id) const {
  uint64_t h = 0;
  std::memcpy(&h, id.data(), sizeof h);
  return static_cast<size_t>(h);
}

int64_t ScanSessions::clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ScanSessions::ScanSessions(boost::asio::io_context& io, int64_t timeout_ms, size_t max_sessions)
    : timer_(io), timeout_ms_(timeout_ms), max_sessions_(std::max<size_t>(1, max_sessions)) {}

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
    std::shared_ptr<pkindex::PkState> state, std::shared_ptr<pkindex::PkSnapshot> snapshot,
    uint64_t connection, int64_t now_ms) {
  auto s = std::make_shared<Session>();
  s->id = random_id();  // outside mu_: may block (a syscall)
  s->connection = connection;
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
  while (sessions_.count(s->id)) s->id = random_id();  // 2^-128 per live session, but cheap
  lru_.push_back(s->id);
  sessions_.emplace(s->id, Entry{s, now_ms, std::prev(lru_.end())});
  return s;
}

std::shared_ptr<ScanSessions::Session> ScanSessions::find(const SessionId& id, uint64_t connection,
                                                          int64_t now_ms) {
  Dropped dropped;
  std::lock_guard lk(mu_);
  expire_locked(now_ms, dropped);
  auto it = sessions_.find(id);
  // Another connection's session is "not found" and stays as it was, so presenting a leaked
  // cursor neither reads the scan nor keeps its snapshot (and the retention it holds) alive.
  if (it == sessions_.end() || it->second.session->connection != connection) return nullptr;
  it->second.last_used_ms = now_ms;
  lru_.splice(lru_.end(), lru_, it->second.lru);
  return it->second.session;
}

void ScanSessions::close(const SessionId& id) {
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

void ScanSessions::erase_locked(Map::iterator it, Dropped& dropped) {
  // The last reference to a session may be this one: its PkSnapshot's destructor takes the
  // snapshot registry exclusively and waits for running page scans, so it must run after mu_ is
  // released (callers destroy `dropped` after unlocking), never under it.
  dropped.push_back(std::move(it->second.session));
  lru_.erase(it->second.lru);
  sessions_.erase(it);
}

void ScanSessions::clear() {
  Map dropped;
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
