// One client connection: reads size-prefixed Kafka frames, hands each to the Dispatcher, and
// writes responses strictly in request order (a later response that is ready waits for earlier
// ones). Handlers may answer asynchronously (Fetch long-polls) from any thread through a Responder;
// all connection state is touched only on the connection's strand. Owned by shared_ptr: the
// Server, in-flight Responders and pending I/O each hold a reference.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <string>

#include "broker/net/asio.h"
#include "broker/net/frame.h"
#include "broker/net/limits.h"
#include "broker/net/listener_security.h"
#include "broker/net/session.h"

namespace strata::broker {

class Connection;
class Dispatcher;

// Completes one request's response slot exactly once. Copyable; thread-safe.
class Responder {
 public:
  Responder() = default;
  Responder(std::shared_ptr<Connection> conn, uint64_t seq) : conn_(std::move(conn)), seq_(seq) {}
  void send(ResponseFrame frame) const;
  // acks=0: the slot is skipped (still muting the connection for `throttle_ms`, see ResponseFrame)
  void no_response(int64_t throttle_ms = 0) const;
  void close(const std::string& reason) const;  // answer nothing and close the connection
  const std::string& peer() const;
  // The connection's id (Connection::id()): what per-connection state such as Scan sessions is
  // bound to.
  uint64_t connection_id() const;
  // The connection's Session: only where handlers run — on the connection's strand, or on the
  // thread a handler was handed to while the connection waits for it (Dispatcher) — so an
  // asynchronous completion must copy what it needs first.
  Session& session() const;
  // A handler handed to another thread (Dispatcher::dispatch returned false) has returned: the
  // connection dispatches its next frame. Once, from that thread, after the handler.
  void handler_returned() const;
  // The connection's strand: where a handler's own timers and wake-ups belong, so its later
  // work runs on the connection's I/O thread and answers without another hand-off.
  boost::asio::any_io_executor executor() const;

 private:
  std::shared_ptr<Connection> conn_;
  uint64_t seq_ = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // `security` null: a PLAINTEXT listener.
  Connection(boost::asio::ip::tcp::socket socket, Dispatcher& dispatcher,
             std::shared_ptr<const ConnectionLimits> limits,
             std::shared_ptr<const ListenerSecurity> security = nullptr);
  ~Connection();
  void start();
  // Stop reading new requests; close once every accepted request has been answered.
  void drain();
  const std::string& peer() const { return peer_; }
  // Unique for the broker process's lifetime (a counter, never reused), unlike peer(): the
  // identity per-connection state is bound to. Immutable; any thread.
  uint64_t id() const { return id_; }
  bool closed() const { return closed_; }
  // Closes the connection when no request is being handled and no byte was read or written for
  // connections.max.idle.ms (Kafka's idle reaper): a client that stops reading a response is
  // idle too. Any thread (posted to the strand).
  void close_if_idle(std::chrono::steady_clock::time_point now);
  const std::string& peer_address() const { return address_; }
  // Strand only (see Session).
  Session& session() { return session_; }
  // Bytes of responses that are complete but not yet written to the socket (file ranges count by
  // their length). Any thread; for metrics and tests.
  int64_t queued_response_bytes() const {
    return queued_response_bytes_.load(std::memory_order_relaxed);
  }
  // The same summed over every connection of the process.
  static int64_t total_queued_response_bytes();
  // Of those, the bytes held in memory (file ranges excluded): what queued.max.response.bytes
  // bounds.
  static int64_t total_queued_response_memory();

 private:
  friend class Responder;
  enum class SlotState { pending, ready, skipped, close };
  struct Slot {
    uint64_t seq = 0;
    SlotState state = SlotState::pending;
    ResponseFrame frame;
    std::string reason;
    int16_t api_key = 0;                               // latency metrics
    int64_t throttle_ms = 0;                           // mute after it (ResponseFrame)
    std::chrono::steady_clock::time_point received{};  // when the frame was complete
  };

  void tls_handshake();
  void read_size();
  void read_next_frame();  // one turn of read_size()'s loop
  void read_body(uint32_t size);
  void read_more_body();
  void read_body_bytes(size_t want);
  void on_frame(std::shared_ptr<RequestFrame> frame);
  void resume_after_handler();
  void complete(uint64_t seq, SlotState state, ResponseFrame frame, std::string reason);
  void pump();
  void write_next();
  void consume_written(size_t n);  // advances pieces_ past n written bytes
  void write_file(int fd, uint64_t offset, uint32_t remaining);
  void write_file_copy(int fd, uint64_t offset, uint32_t remaining);  // TLS: no sendfile
  // The socket or, on a TLS listener, the TLS stream over it.
  template <typename Buffers, typename Handler>
  void read_some(const Buffers& buffers, Handler&& handler);
  template <typename Buffers, typename Handler>
  void write_all(const Buffers& buffers, Handler&& handler);
  void close(const std::string& reason);
  void maybe_resume_reading();
  bool response_queue_full() const {
    return limits_->max_queued_response_bytes >= 0 &&
           queued_response_bytes_.load(std::memory_order_relaxed) >=
               limits_->max_queued_response_bytes;
  }
  struct Queued {
    int64_t bytes = 0;   // memory and file ranges
    int64_t memory = 0;  // memory only
  };
  void add_queued(Queued delta);
  static Queued frame_bytes(const ResponseFrame& f);
  bool muted() const { return std::chrono::steady_clock::now() < muted_until_; }
  void mute_for(int64_t ms);
  void arm_mute_timer();

  static constexpr size_t kMaxInFlight = 256;

  const uint64_t id_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;
  const std::shared_ptr<const ListenerSecurity> security_;
  struct Tls;                 // the TLS stream over socket_ and its context (connection.cc)
  std::unique_ptr<Tls> tls_;  // TLS listeners only
  // TLS writes: memory pieces are gathered into one buffer (a TLS record per small piece would
  // cost a record header and a syscall each) and file ranges are read into it (no sendfile).
  static constexpr size_t kTlsChunk = 256 * 1024;
  std::vector<uint8_t> tls_buffer_;
  bool close_after_write_ = false;  // a frame with close_after is being written
  Dispatcher& dispatcher_;
  const std::shared_ptr<const ConnectionLimits> limits_;
  std::string peer_;
  std::string address_;  // the peer's IP address (max.connections.per.ip)
  Session session_;
  // Steady-clock ns of the last completed read or write: written on the strand, read by the
  // Server's idle sweep from another thread.
  std::atomic<int64_t> last_activity_;
  static int64_t steady_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void touch() { last_activity_.store(steady_now_ns(), std::memory_order_relaxed); }
  boost::asio::steady_timer frame_timer_;  // socket.request.read.timeout.ms
  // Read-ahead: a size read asks the socket for up to kHead bytes, so a small request arrives
  // with its size prefix in one recv (and pipelined ones after it); [head_pos_, head_end_) is
  // not parsed yet. Bodies take their first bytes from here, the rest from the socket.
  static constexpr size_t kHead = 1024;
  uint8_t head_[kHead];
  uint16_t head_pos_ = 0;
  uint16_t head_end_ = 0;
  size_t head_buffered() const { return head_end_ - head_pos_; }
  // The frame being read and its announced size: its bytes are taken from the pool as they come.
  std::shared_ptr<RequestFrame> body_;
  uint32_t body_size_ = 0;
  bool first_socket_read_ = false;              // the frame's body has not asked the socket yet
  std::shared_ptr<Connection> pool_wait_self_;  // while waiting for the request pool
  bool frame_timer_armed_ = false;              // for the frame being read
  bool in_read_size_ = false;                   // read_size()'s loop is on the stack
  bool read_size_again_ = false;                // ... and was asked for another turn
  static constexpr size_t kMinBodyRead = 4096;  // what a read waiting for bytes holds meanwhile
  std::deque<Slot> slots_;
  uint64_t next_seq_ = 0;
  bool reading_ = false;
  // Reading pauses (read_size() starts no read; maybe_resume_reading() restarts it) while
  // kMaxInFlight requests are unanswered, while queued_response_bytes_ is at
  // connection.max.queued.response.bytes (Kafka reads nothing from a connection while a response is
  // being sent; we pipeline until the budget is used), and while a client-quota mute lasts: after a
  // response carrying a throttle is written, nothing more is read from the client until
  // muted_until_ (a frame whose read was already under way is held, undispatched, until then).
  bool read_paused_ = false;
  // A handler runs on another thread (Dispatcher): nothing is read or dispatched until it returns.
  bool handler_away_ = false;
  std::chrono::steady_clock::time_point muted_until_{};
  boost::asio::steady_timer mute_timer_;
  int64_t pending_mute_ms_ = 0;  // the largest throttle of the responses being written
  std::shared_ptr<RequestFrame> held_frame_;
  bool draining_ = false;
  bool writing_ = false;
  std::atomic<bool> closed_{false};  // also read by the Server's admission and drain
  // The response being written: memory pieces and file ranges in order.
  struct Piece {
    const uint8_t* data = nullptr;
    size_t len = 0;
    int fd = -1;
    uint64_t file_offset = 0;
  };
  std::vector<ResponseFrame> writing_frames_;
  Queued writing_bytes_;  // frame_bytes() of writing_frames_
  // Ready slots' frames plus writing_frames_: written on the strand, read from any thread.
  std::atomic<int64_t> queued_response_bytes_{0};
  std::atomic<int64_t> queued_response_memory_{0};
  std::vector<Piece> pieces_;
  size_t piece_index_ = 0;
  bool sync_write_ = false;  // inside write_next()'s one direct write (no second one nested)
};

}  // namespace strata::broker
