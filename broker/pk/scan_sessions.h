// ScanSessions: the broker-wide registry of open primary-key Scans (extension API Scan). A session
// pins one pkindex::PkSnapshot of one partition; the Scan handler opens it on a first page, finds
// it again by id from a page cursor, and closes it on the last page. Sessions idle longer than
// pk.scan.session.timeout.ms are dropped (lazily on every call and by a once-a-second sweep on the
// broker's io_context); beyond pk.scan.max.sessions the least recently used one is dropped.
// Dropping a session releases its snapshot once no page is being served from it. A session id is
// 128 bits from the kernel's CSPRNG (getrandom(2)), so a cursor cannot be derived from another one,
// and a session is bound to the connection that opened it: find() from any other connection answers
// "not found", exactly like an expired session (a leaked cursor is useless elsewhere, and a foreign
// connection can neither read nor keep alive someone's scan). Owned by Broker. Thread-safe (any io
// thread).
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "broker/net/asio.h"
#include "pkindex/pk_scan.h"
#include "pkindex/pk_state.h"

namespace strata::broker {

class ScanSessions {
 public:
  using SessionId = std::array<uint8_t, 16>;

  struct Session {
    SessionId id{};
    uint64_t connection = 0;  // Connection::id() of the opener: the only one that may continue
    std::string principal;    // who opened it: a cursor is refused to anyone else (ext_scan.cc)
    std::string topic;        // name
    std::string topic_id;     // TopicEntry::id bytes
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

  // Registers a new session of `connection` under a fresh random id; returns it (with its id).
  // Throws std::system_error if the kernel cannot supply random bytes.
  std::shared_ptr<Session> open(std::string topic, std::string topic_id, int32_t partition,
                                std::shared_ptr<pkindex::PkState> state,
                                std::shared_ptr<pkindex::PkSnapshot> snapshot, uint64_t connection,
                                int64_t now_ms);
  // The live session `id` opened by `connection` (its idle clock restarts), or nullptr when
  // unknown, expired, or opened by another connection (then left untouched: its idle clock and
  // LRU position do not move).
  std::shared_ptr<Session> find(const SessionId& id, uint64_t connection, int64_t now_ms);
  void close(const SessionId& id);
  // Drops sessions idle for the timeout; returns how many.
  size_t expire(int64_t now_ms);
  void clear();
  size_t size() const;

  // 16 bytes from getrandom(2) (/dev/urandom where the syscall is missing); throws
  // std::system_error when neither works.
  static SessionId random_id();

 private:
  struct IdHash {
    size_t operator()(const SessionId& id) const;  // ids are uniformly random: 8 of their bytes
  };
  struct Entry {
    std::shared_ptr<Session> session;
    int64_t last_used_ms;
    std::list<SessionId>::iterator lru;  // position in lru_ (front = least recently used)
  };
  using Map = std::unordered_map<SessionId, Entry, IdHash>;
  // Sessions erased under mu_, destroyed by the caller after unlocking (a session's last
  // reference releases its snapshot, which may wait for a running page scan).
  using Dropped = std::vector<std::shared_ptr<Session>>;
  void schedule_sweep();
  size_t expire_locked(int64_t now_ms, Dropped& dropped);
  void erase_locked(Map::iterator it, Dropped& dropped);

  boost::asio::steady_timer timer_;
  const int64_t timeout_ms_;
  const size_t max_sessions_;
  mutable std::mutex mu_;
  bool stopped_ = false;
  Map sessions_;
  std::list<SessionId> lru_;
};

}  // namespace strata::broker
