// ScanSessions: the broker-wide registry of open primary-key Scans (extension API Scan, issue 5;
// engineer H1). A session pins one pkindex::PkSnapshot of one partition; the Scan handler opens
// it on a first page, finds it again by id from a page cursor, and closes it on the last page.
// Sessions idle longer than pk.scan.session.timeout.ms are dropped (lazily on every call and by a
// once-a-second sweep on the broker's io_context); beyond pk.scan.max.sessions the least recently
// used one is dropped. Dropping a session releases its snapshot once no page is being served from
// it. Owned by Broker. Thread-safe (any io thread).
#pragma once

#include "broker/net/asio.h"

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "pkindex/pk_scan.h"
#include "pkindex/pk_state.h"

namespace strata::broker {

class ScanSessions {
 public:
  struct Session {
    uint64_t id = 0;
    std::string topic;     // name
    std::string topic_id;  // TopicEntry::id bytes
    int32_t partition = 0;
    // Order matters: the snapshot goes before the state that owns its RocksDB.
    std::shared_ptr<pkindex::PkState> state;
    std::shared_ptr<pkindex::PkSnapshot> snapshot;
  };

  ScanSessions(boost::asio::io_context& io, int64_t timeout_ms, size_t max_sessions);
  ~ScanSessions();

  // Starts the periodic sweep; stop() cancels it (call before the io_context stops).
  void start();
  void stop();

  // The idle clock (ms of std::chrono::steady_clock: a wall-clock step never expires sessions
  // early or keeps them forever). `now_ms` arguments below are on this clock.
  static int64_t clock_ms();

  // Registers a new session; returns it (with its id).
  std::shared_ptr<Session> open(std::string topic, std::string topic_id, int32_t partition,
                                std::shared_ptr<pkindex::PkState> state,
                                std::shared_ptr<pkindex::PkSnapshot> snapshot, int64_t now_ms);
  // The live session `id` (its idle clock restarts), or nullptr when unknown or expired.
  std::shared_ptr<Session> find(uint64_t id, int64_t now_ms);
  void close(uint64_t id);
  // Drops sessions idle for the timeout; returns how many.
  size_t expire(int64_t now_ms);
  void clear();
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<Session> session;
    int64_t last_used_ms;
    std::list<uint64_t>::iterator lru;  // position in lru_ (front = least recently used)
  };
  // Sessions erased under mu_, destroyed by the caller after unlocking (a session's last
  // reference releases its snapshot, which may wait for a running page scan).
  using Dropped = std::vector<std::shared_ptr<Session>>;
  void schedule_sweep();
  size_t expire_locked(int64_t now_ms, Dropped& dropped);
  void erase_locked(std::unordered_map<uint64_t, Entry>::iterator it, Dropped& dropped);

  boost::asio::steady_timer timer_;
  const int64_t timeout_ms_;
  const size_t max_sessions_;
  mutable std::mutex mu_;
  bool stopped_ = false;
  uint64_t next_id_;
  std::unordered_map<uint64_t, Entry> sessions_;
  std::list<uint64_t> lru_;
};

}  // namespace strata::broker
