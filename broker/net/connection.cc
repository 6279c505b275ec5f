#include "broker/net/connection.h"

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "broker/net/asio_ssl.h"
#include "broker/net/dispatcher.h"

namespace strata::broker {

namespace asio = boost::asio;

struct Connection::Tls {
  Tls(asio::ip::tcp::socket& socket, std::shared_ptr<asio::ssl::context> ctx)
      : context(std::move(ctx)), stream(socket, *context) {}
  std::shared_ptr<asio::ssl::context> context;  // the one the handshake used
  asio::ssl::stream<asio::ip::tcp::socket&> stream;
};

void Responder::send(ResponseFrame frame) const {
  if (!frame.unencodable.empty()) return close(frame.unencodable);
  conn_->complete(seq_, Connection::SlotState::ready, std::move(frame), {});
}
void Responder::no_response(int64_t throttle_ms) const {
  ResponseFrame none;
  none.throttle_ms = throttle_ms;
  conn_->complete(seq_, Connection::SlotState::skipped, std::move(none), {});
}
void Responder::close(const std::string& reason) const {
  conn_->complete(seq_, Connection::SlotState::close, {}, reason);
}
const std::string& Responder::peer() const { return conn_->peer(); }
uint64_t Responder::connection_id() const { return conn_->id(); }
Session& Responder::session() const { return conn_->session(); }
asio::any_io_executor Responder::executor() const { return conn_->strand_; }
void Responder::handler_returned() const { conn_->resume_after_handler(); }

namespace {
std::atomic<uint64_t> next_connection_id{1};  // 0 is never a connection's id
std::atomic<int64_t> all_queued_response_bytes{0};
std::atomic<int64_t> all_queued_response_memory{0};
}  // namespace

int64_t Connection::total_queued_response_bytes() {
  return all_queued_response_bytes.load(std::memory_order_relaxed);
}
int64_t Connection::total_queued_response_memory() {
  return all_queued_response_memory.load(std::memory_order_relaxed);
}

// What a response holds until it is written: its own bytes and every spliced part (a file range
// pins its segment's descriptor through the part's owner, so it counts by its length too; only
// memory parts count as memory).
Connection::Queued Connection::frame_bytes(const ResponseFrame& f) {
  Queued q{static_cast<int64_t>(f.bytes.size()), static_cast<int64_t>(f.bytes.size())};
  for (const auto& [at, part] : f.external) {
    q.bytes += part.length;
    if (part.data) q.memory += part.length;
  }
  return q;
}

void Connection::add_queued(Queued delta) {
  if (delta.bytes != 0) {
    queued_response_bytes_.fetch_add(delta.bytes, std::memory_order_relaxed);
    all_queued_response_bytes.fetch_add(delta.bytes, std::memory_order_relaxed);
  }
  if (delta.memory != 0) {
    queued_response_memory_.fetch_add(delta.memory, std::memory_order_relaxed);
    all_queued_response_memory.fetch_add(delta.memory, std::memory_order_relaxed);
  }
}

Connection::Connection(asio::ip::tcp::socket socket, Dispatcher& dispatcher,
                       std::shared_ptr<const ConnectionLimits> limits,
                       std::shared_ptr<const ListenerSecurity> security)
    : id_(next_connection_id.fetch_add(1, std::memory_order_relaxed)),
      socket_(std::move(socket)),
      strand_(asio::make_strand(socket_.get_executor())),
      security_(std::move(security)),
      dispatcher_(dispatcher),
      limits_(std::move(limits)),
      last_activity_(steady_now_ns()),
      frame_timer_(strand_),
      mute_timer_(strand_) {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  address_ = ec ? "?" : ep.address().to_string();
  peer_ = ec ? "?" : address_ + ":" + std::to_string(ep.port());
  session_.host = address_;
  if (security_) {
    session_.listener = security_->name;
    session_.protocol = security_->protocol;
    if (uses_sasl(session_.protocol)) session_.sasl = Session::Sasl::handshake;
    if (security_->tls) tls_ = std::make_unique<Tls>(socket_, security_->tls->get());
  }
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  socket_.native_non_blocking(true, ec);  // sendfile must not block an I/O thread
}

Connection::~Connection() = default;

void Connection::start() {
  dispatcher_.connection_opened();  // metrics; close() reports the other end
  asio::dispatch(strand_, [self = shared_from_this()] {
    if (self->tls_) {
      self->tls_handshake();
    } else {
      self->read_size();
    }
  });
}

namespace {
// The RFC 2253 subject of the peer's certificate ("" when it sent none).
std::string peer_subject(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return {};
  std::string out;
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio && X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0,
                                XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    if (n > 0) out.assign(data, static_cast<size_t>(n));
  }
  BIO_free(bio);
  X509_free(cert);
  return out;
}
}  // namespace

// The handshake must finish within socket.request.read.timeout.ms, like a started frame: a
// client that connects and sends nothing (or a plaintext client on a TLS port waiting for an
// answer) does not hold the connection open until the idle reaper.
void Connection::tls_handshake() {
  reading_ = true;
  if (limits_->request_read_timeout_ms > 0) {
    frame_timer_.expires_after(std::chrono::milliseconds(limits_->request_read_timeout_ms));
    frame_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closed_) return;
      spdlog::info("closing {}: no TLS handshake within socket.request.read.timeout.ms={}",
                   self->peer_, self->limits_->request_read_timeout_ms);
      self->close("TLS handshake timeout");
    });
  }
  tls_->stream.async_handshake(
      asio::ssl::stream_base::server,
      asio::bind_executor(strand_, [self = shared_from_this()](boost::system::error_code ec) {
        self->reading_ = false;
        self->frame_timer_.cancel();
        if (self->closed_) return;
        if (ec) {
          // A plaintext client on a TLS port lands here too ("wrong version number").
          spdlog::info("closing {}: TLS handshake failed on listener {}: {}", self->peer_,
                       self->session_.listener, ec.message());
          self->close("TLS handshake failed");
          return;
        }
        const std::string subject = peer_subject(self->tls_->stream.native_handle());
        if (!subject.empty() && self->security_->principal_of_subject &&
            !uses_sasl(self->session_.protocol)) {
          auto principal = self->security_->principal_of_subject(subject);
          if (!principal.ok()) {
            spdlog::warn("closing {}: client certificate {} refused: {}", self->peer_, subject,
                         principal.status().message());
            self->close("client certificate refused");
            return;
          }
          self->session_.principal = *principal;
        }
        self->touch();
        self->read_size();
      }));
}

template <typename Buffers, typename Handler>
void Connection::read_some(const Buffers& buffers, Handler&& handler) {
  if (tls_) {
    tls_->stream.async_read_some(buffers,
                                 asio::bind_executor(strand_, std::forward<Handler>(handler)));
  } else {
    socket_.async_read_some(buffers, asio::bind_executor(strand_, std::forward<Handler>(handler)));
  }
}

template <typename Buffers, typename Handler>
void Connection::write_all(const Buffers& buffers, Handler&& handler) {
  if (tls_) {
    asio::async_write(tls_->stream, buffers,
                      asio::bind_executor(strand_, std::forward<Handler>(handler)));
  } else {
    asio::async_write(socket_, buffers,
                      asio::bind_executor(strand_, std::forward<Handler>(handler)));
  }
}

void Connection::drain() {
  asio::post(strand_, [self = shared_from_this()] {
    self->draining_ = true;
    if (self->slots_.empty() && !self->writing_) self->close("broker shutting down");
  });
}

// Frames already read ahead are parsed by this loop, one after another: a read_size() reached
// from within (on_frame after a dispatch, or a write's completion resuming reading) only asks
// for another turn, so the stack does not grow with the number of pipelined frames.
void Connection::read_size() {
  if (in_read_size_) {
    read_size_again_ = true;
    return;
  }
  in_read_size_ = true;
  do {
    read_size_again_ = false;
    read_next_frame();
  } while (read_size_again_ && !closed_);
  in_read_size_ = false;
}

void Connection::read_next_frame() {
  if (closed_ || draining_ || handler_away_) return;
  if (slots_.size() >= kMaxInFlight || response_queue_full() || muted()) {
    read_paused_ = true;  // backpressure or a quota mute: resume once responses drain / it ends
    if (muted()) arm_mute_timer();
    return;
  }
  if (head_buffered() < 4) {
    // Keep the partial prefix at the front and ask the socket for as much as fits.
    if (head_pos_ > 0) {
      std::memmove(head_, head_ + head_pos_, head_buffered());
      head_end_ = static_cast<uint16_t>(head_buffered());
      head_pos_ = 0;
    }
    reading_ = true;
    read_some(asio::buffer(head_ + head_end_, kHead - head_end_),
              [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                self->reading_ = false;
                if (ec) {
                  self->close(ec == asio::error::eof ? "" : ec.message());
                  return;
                }
                self->head_end_ = static_cast<uint16_t>(self->head_end_ + n);
                self->touch();
                self->read_size();  // parses the prefix, or reads more of it
              });
    return;
  }
  const uint8_t* p = head_ + head_pos_;
  head_pos_ = static_cast<uint16_t>(head_pos_ + 4);
  const uint32_t size =
      (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
  const auto ssize = static_cast<int32_t>(size);
  // Before authentication a frame is at most sasl.server.max.receive.size (Kafka's rule); a
  // bare SASL token has no Kafka header, so it may be shorter than one.
  const int32_t max = session_.authenticated() ? limits_->max_request_bytes
                                               : std::min(limits_->max_request_bytes,
                                                          limits_->max_unauthenticated_bytes);
  const int32_t min = session_.sasl == Session::Sasl::raw_token ? 1 : 8;
  if (ssize < min || ssize > max) {
    // Kafka closes the connection on a size it will not read (InvalidReceive). A TLS client
    // on a plaintext port reads as ~369 MB here (its ClientHello's first bytes).
    spdlog::warn("closing {}: request size {} outside [{}, {}] ({})", peer_, ssize, min, max,
                 session_.authenticated() ? "socket.request.max.bytes"
                                          : "sasl.server.max.receive.size before authentication");
    close("bad frame size");
    return;
  }
  read_body(size);
}

// The body's bytes come from the broker-wide request pool (queued.max.request.bytes) as they
// arrive: each read takes what the socket has (at least kMinBodyRead) before reading it, and while
// the pool is used up this connection stops reading (the client's sends back up in TCP) until the
// pool wakes it, instead of allocating. A client that announces a large frame and trickles it
// holds only what it sent. From the size prefix on, the whole frame must arrive within
// socket.request.read.timeout.ms: a client trickling bytes cannot hold a buffer forever.
void Connection::read_body(uint32_t size) {
  if (closed_) return;
  body_ = std::make_shared<RequestFrame>();
  body_->bytes = limits_->pool->take_buffer(size);
  body_->pool = limits_->pool;
  body_size_ = size;
  first_socket_read_ = true;
  reading_ = true;
  // A frame already read ahead whole needs no timer (and saves arming one per small request).
  frame_timer_armed_ = limits_->request_read_timeout_ms > 0 && size > head_buffered();
  if (frame_timer_armed_) {
    frame_timer_.expires_after(std::chrono::milliseconds(limits_->request_read_timeout_ms));
    frame_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closed_) return;
      spdlog::warn(
          "closing {}: a request frame did not arrive within "
          "socket.request.read.timeout.ms={}",
          self->peer_, self->limits_->request_read_timeout_ms);
      self->close("request frame read timeout");
    });
  }
  read_more_body();
}

void Connection::read_more_body() {
  if (closed_) return;
  const size_t have = body_->bytes.size();
  if (have == body_size_) {
    reading_ = false;
    if (frame_timer_armed_) frame_timer_.cancel();
    frame_timer_armed_ = false;
    touch();
    on_frame(std::move(body_));
    return;
  }
  // What the read-ahead holds first; then a rest below the minimum read is taken whole without
  // asking the socket what it has.
  size_t want = std::min<size_t>(body_size_ - have, head_buffered());
  if (want == 0) {
    size_t available = 0;
    if (body_size_ - have > kMinBodyRead) {
      boost::system::error_code ec;
      available = socket_.available(ec);  // TLS: the ciphertext, a fair estimate
    }
    want = std::min<size_t>(body_size_ - have, std::max(available, kMinBodyRead));
  }
  const auto bytes = static_cast<int64_t>(want);
  std::weak_ptr<Connection> weak = weak_from_this();
  auto on_grant = [weak, bytes, pool = limits_->pool] {
    auto self = weak.lock();
    if (!self) {
      pool->release(bytes);
      return;
    }
    asio::post(self->strand_, [self, bytes] {
      self->pool_wait_self_.reset();
      if (self->closed_) {
        self->limits_->pool->release(bytes);  // body_ is gone with what it held
        return;
      }
      self->body_->pooled_bytes += bytes;
      self->read_body_bytes(static_cast<size_t>(bytes));
    });
  };
  if (!limits_->pool->reserve_or_wait(bytes, body_->pooled_bytes, std::move(on_grant))) {
    // Nothing else may hold the connection while it waits (no read or timer is pending when the
    // frame was read ahead whole, or without socket.request.read.timeout.ms): the pool holds it
    // weakly, so a closed connection is not kept; this keeps an open one. The grant runs on this
    // strand after this handler returns, so setting it here is in time.
    pool_wait_self_ = shared_from_this();
    return;
  }
  body_->pooled_bytes += bytes;
  read_body_bytes(want);
}

// Reads up to `want` more body bytes (taken from the pool already), giving back what did not come.
void Connection::read_body_bytes(size_t want) {
  auto& b = body_->bytes;
  const size_t have = b.size();
  if (b.capacity() < have + want) {  // grows geometrically, never past the announced size
    b.reserve(std::min<size_t>(body_size_, std::max(2 * b.capacity(), have + want)));
  }
  b.resize(have + want);
  // The handler owns the frame too: its buffer must outlive a read that close() cancels.
  auto on_read = [self = shared_from_this(), frame = body_, have, want](
                     boost::system::error_code ec, size_t n) mutable {
    if (self->closed_) return;  // `frame` gives its bytes back as it goes
    frame->bytes.resize(have + n);
    const auto unused = static_cast<int64_t>(want - n);
    frame->pooled_bytes -= unused;
    self->limits_->pool->release(unused);
    if (ec) {
      self->close(ec == asio::error::eof ? "truncated frame" : ec.message());
      return;
    }
    frame.reset();  // body_ holds it; a finished frame is not pinned by this call's stack
    self->read_more_body();
  };
  if (const size_t buffered = head_buffered(); buffered > 0) {
    // From the read-ahead (reserve_or_wait kept it there while the pool was used up).
    const size_t n = std::min(want, buffered);
    std::memcpy(b.data() + have, head_ + head_pos_, n);
    head_pos_ = static_cast<uint16_t>(head_pos_ + n);
    on_read({}, n);
    return;
  }
  auto buf = asio::buffer(b.data() + have, want);
  if (tls_) {
    tls_->stream.async_read_some(buf, asio::bind_executor(strand_, std::move(on_read)));
    return;
  }
  // The body's first read from the socket: the rest of a frame that did not fit the read-ahead
  // usually arrived with it, so read it here at once rather than through the reactor, whose
  // completion is posted and often wakes another I/O thread (a hand-off per request). Once per
  // frame; the frames after it are parsed by read_size()'s loop, not deeper in this stack.
  if (first_socket_read_) {
    first_socket_read_ = false;
    const ssize_t n = ::recv(socket_.native_handle(), b.data() + have, want, MSG_DONTWAIT);
    if (n > 0) {
      on_read({}, static_cast<size_t>(n));
      return;
    }
    if (n == 0) {
      on_read(asio::error::eof, 0);
      return;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      on_read(boost::system::error_code(errno, boost::system::system_category()), 0);
      return;
    }
  }
  socket_.async_read_some(buf, asio::bind_executor(strand_, std::move(on_read)));
}

void Connection::close_if_idle(std::chrono::steady_clock::time_point now) {
  if (limits_->idle_ms < 0) return;
  // Checked here first, off the strand, so a sweep over many busy connections posts nothing.
  auto is_idle = [this, now] {
    return now.time_since_epoch() - std::chrono::nanoseconds(last_activity_.load()) >=
           std::chrono::milliseconds(limits_->idle_ms);
  };
  if (!is_idle()) return;
  asio::post(strand_, [self = shared_from_this(), is_idle] {
    // A response being written does not keep the connection: a client that stopped reading it
    // moves no bytes either (Kafka's rule). Requests still being handled (a long-poll) do.
    if (self->closed_ || self->held_frame_) return;
    for (const Slot& s : self->slots_) {
      if (s.state == SlotState::pending) return;
    }
    if (!is_idle()) return;
    spdlog::info("closing {}: idle for connections.max.idle.ms={}", self->peer_,
                 self->limits_->idle_ms);
    self->close("idle");
  });
}

void Connection::on_frame(std::shared_ptr<RequestFrame> frame) {
  if (muted()) {  // read before the mute began: held until it ends
    held_frame_ = std::move(frame);
    reading_ = true;  // logically still reading: nothing else may start a read
    arm_mute_timer();
    return;
  }
  const auto& b = frame->bytes;
  if (session_.sasl == Session::Sasl::raw_token) {
    // After SaslHandshake v0 the client sends bare SASL tokens; the dispatcher answers them.
    frame->raw_sasl_token = true;
    frame->api_key = 36;  // counted as SaslAuthenticate
  } else {
    frame->api_key = static_cast<int16_t>((b[0] << 8) | b[1]);
    frame->api_version = static_cast<int16_t>((b[2] << 8) | b[3]);
    frame->correlation_id = static_cast<int32_t>((uint32_t(b[4]) << 24) | (uint32_t(b[5]) << 16) |
                                                 (uint32_t(b[6]) << 8) | b[7]);
  }
  uint64_t seq = next_seq_++;
  Slot slot;
  slot.seq = seq;
  slot.api_key = frame->api_key;
  slot.received = std::chrono::steady_clock::now();
  slots_.push_back(std::move(slot));
  if (!dispatcher_.dispatch(std::move(frame), Responder(shared_from_this(), seq))) {
    handler_away_ = true;  // resume_after_handler() reads on (its post runs after this returns)
    return;
  }
  read_size();
}

void Connection::resume_after_handler() {
  asio::post(strand_, [self = shared_from_this()] {
    self->handler_away_ = false;
    // Nothing started a read meanwhile (read_next_frame() returned at once).
    if (!self->reading_) self->read_size();
  });
}

void Connection::complete(uint64_t seq, SlotState state, ResponseFrame frame, std::string reason) {
  asio::dispatch(strand_, [self = shared_from_this(), seq, state, frame = std::move(frame),
                           reason = std::move(reason)]() mutable {
    for (auto& s : self->slots_) {
      if (s.seq == seq) {
        if (state != SlotState::close) {  // request latency by api
          self->dispatcher_.request_completed(s.api_key,
                                              std::chrono::steady_clock::now() - s.received);
        }
        s.state = state;
        s.throttle_ms = frame.throttle_ms;
        if (state == SlotState::ready) self->add_queued(frame_bytes(frame));
        s.frame = std::move(frame);
        s.reason = std::move(reason);
        break;
      }
    }
    self->pump();
  });
}

void Connection::pump() {
  if (closed_ || writing_) return;
  // Collect every ready response at the head of the queue into one gathered write.
  writing_frames_.clear();
  while (!slots_.empty() && slots_.front().state != SlotState::pending) {
    Slot& s = slots_.front();
    if (s.state == SlotState::close) {
      if (writing_frames_.empty()) {
        spdlog::warn("closing connection {}: {}", peer_, s.reason);
        close(s.reason);
        return;
      }
      break;  // write what precedes it first
    }
    const bool last = s.state == SlotState::ready && s.frame.close_after;
    if (s.state == SlotState::ready) {
      const Queued q = frame_bytes(s.frame);
      writing_bytes_.bytes += q.bytes;
      writing_bytes_.memory += q.memory;
      writing_frames_.push_back(std::move(s.frame));
    }
    pending_mute_ms_ = std::max(pending_mute_ms_, s.throttle_ms);
    slots_.pop_front();
    if (last) {
      close_after_write_ = true;
      break;
    }
  }
  if (writing_frames_.empty()) {
    mute_for(pending_mute_ms_);  // skipped slots only (acks=0): mute at once
    if (draining_ && slots_.empty()) close("broker shutting down");
    maybe_resume_reading();
    return;
  }
  pieces_.clear();
  for (auto& f : writing_frames_) {
    size_t pos = 0;
    for (auto& [at, part] : f.external) {
      if (at > pos) pieces_.push_back(Piece{f.bytes.data() + pos, at - pos});
      if (part.data) {
        pieces_.push_back(Piece{part.data, part.length});
      } else {
        pieces_.push_back(Piece{nullptr, part.length, part.fd, part.file_offset});
      }
      pos = at;
    }
    if (pos < f.bytes.size()) pieces_.push_back(Piece{f.bytes.data() + pos, f.bytes.size() - pos});
  }
  piece_index_ = 0;
  writing_ = true;
  write_next();
}

void Connection::write_next() {
  if (closed_) return;
  if (piece_index_ >= pieces_.size()) {
    if (close_after_write_) {
      close("closed after its last response");
      return;
    }
    writing_ = false;
    touch();
    mute_for(pending_mute_ms_);  // the throttled responses are out: now the client waits
    writing_frames_.clear();
    pieces_.clear();
    add_queued({-writing_bytes_.bytes, -writing_bytes_.memory});
    writing_bytes_ = {};
    pump();
    maybe_resume_reading();  // pump() resumes only when nothing more is queued
    return;
  }
  const Piece& p = pieces_[piece_index_];
  if (p.fd >= 0) {
    write_file(p.fd, p.file_offset, static_cast<uint32_t>(p.len));
    return;
  }
  if (tls_) {  // one TLS write of the consecutive memory pieces, copied together
    tls_buffer_.clear();
    size_t end = piece_index_;
    while (end < pieces_.size() && pieces_[end].fd < 0 &&
           (tls_buffer_.empty() || tls_buffer_.size() + pieces_[end].len <= kTlsChunk)) {
      tls_buffer_.insert(tls_buffer_.end(), pieces_[end].data,
                         pieces_[end].data + pieces_[end].len);
      ++end;
    }
    write_all(asio::buffer(tls_buffer_),
              [self = shared_from_this(), end](boost::system::error_code ec, size_t) {
                if (ec) {
                  self->close(ec.message());
                  return;
                }
                self->touch();
                self->piece_index_ = end;
                self->write_next();
              });
    return;
  }
  // Gather consecutive memory pieces into one writev; whatever part of them the socket takes is
  // progress (the idle reaper closes a connection whose client stopped reading, not a slow one).
  std::vector<asio::const_buffer> bufs;
  size_t end = piece_index_;
  while (end < pieces_.size() && pieces_[end].fd < 0 && bufs.size() < 64) {
    if (pieces_[end].len) bufs.emplace_back(pieces_[end].data, pieces_[end].len);
    ++end;
  }
  if (bufs.empty()) {  // empty pieces only
    piece_index_ = end;
    write_next();
    return;
  }
  // A response usually fits the socket's buffer: write it here at once rather than through the
  // reactor (whose completion is posted, often to another I/O thread). Once per write_next()
  // chain, so finishing one response and starting the next never recurses deeper than that.
  if (!sync_write_) {
    struct iovec iov[64];
    for (size_t i = 0; i < bufs.size(); ++i) {
      iov[i].iov_base = const_cast<void*>(bufs[i].data());
      iov[i].iov_len = bufs[i].size();
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = bufs.size();
    const ssize_t n = ::sendmsg(socket_.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      touch();
      consume_written(static_cast<size_t>(n));
      sync_write_ = true;
      write_next();
      sync_write_ = false;
      return;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      close(std::string("write: ") + strerror(errno));
      return;
    }
  }
  socket_.async_write_some(
      bufs, asio::bind_executor(
                strand_, [self = shared_from_this()](boost::system::error_code ec, size_t n) {
                  if (ec) {
                    self->close(ec.message());
                    return;
                  }
                  self->touch();
                  self->consume_written(n);
                  self->write_next();
                }));
}

void Connection::consume_written(size_t n) {
  while (n > 0 && piece_index_ < pieces_.size()) {
    Piece& p = pieces_[piece_index_];
    const size_t take = std::min(n, p.len);
    p.data += take;
    p.len -= take;
    n -= take;
    if (p.len == 0) ++piece_index_;
  }
  while (piece_index_ < pieces_.size() && pieces_[piece_index_].fd < 0 &&
         pieces_[piece_index_].len == 0) {
    ++piece_index_;
  }
}

// Log bytes go from the page cache to the socket without passing through user space.
void Connection::write_file(int fd, uint64_t offset, uint32_t remaining) {
  if (tls_) {
    write_file_copy(fd, offset, remaining);
    return;
  }
  while (remaining > 0) {
    off_t off = static_cast<off_t>(offset);
    ssize_t n = ::sendfile(socket_.native_handle(), fd, &off, remaining);
    if (n > 0) {
      offset += static_cast<uint64_t>(n);
      remaining -= static_cast<uint32_t>(n);
      touch();
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      socket_.async_wait(asio::ip::tcp::socket::wait_write,
                         asio::bind_executor(strand_, [self = shared_from_this(), fd, offset,
                                                       remaining](boost::system::error_code ec) {
                           if (ec) {
                             self->close(ec.message());
                             return;
                           }
                           self->write_file(fd, offset, remaining);
                         }));
      return;
    }
    if (n < 0 && errno == EINTR) continue;
    // n == 0: the file is shorter than promised (truncated under us) — the frame is now wrong.
    close(n == 0 ? "log file shrank during send" : std::string("sendfile: ") + strerror(errno));
    return;
  }
  ++piece_index_;
  write_next();
}

// TLS encrypts in user space, so file ranges are read (from the page cache, usually) into a
// buffer and written through the TLS stream, a chunk at a time.
void Connection::write_file_copy(int fd, uint64_t offset, uint32_t remaining) {
  if (remaining == 0) {
    ++piece_index_;
    write_next();
    return;
  }
  const size_t want = std::min<size_t>(remaining, kTlsChunk);
  tls_buffer_.resize(want);
  ssize_t n;
  do {
    n = ::pread(fd, tls_buffer_.data(), want, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    close(n == 0 ? "log file shrank during send" : std::string("pread: ") + strerror(errno));
    return;
  }
  const auto got = static_cast<uint32_t>(n);
  write_all(asio::buffer(tls_buffer_.data(), got),
            [self = shared_from_this(), fd, offset, remaining, got](boost::system::error_code ec,
                                                                    size_t) {
              if (ec) {
                self->close(ec.message());
                return;
              }
              self->touch();
              self->write_file_copy(fd, offset + got, remaining - got);
            });
}

void Connection::maybe_resume_reading() {
  if (closed_ || !read_paused_ || reading_ || slots_.size() >= kMaxInFlight / 2) return;
  if (response_queue_full()) return;  // the write that drains it calls back here
  if (muted()) {
    arm_mute_timer();
    return;
  }
  read_paused_ = false;
  read_size();
}

void Connection::mute_for(int64_t ms) {
  if (ms <= 0) return;
  pending_mute_ms_ = 0;
  muted_until_ =
      std::max(muted_until_, std::chrono::steady_clock::now() + std::chrono::milliseconds(ms));
}

// Wakes reading when the mute ends: dispatches the held frame or resumes the paused read.
void Connection::arm_mute_timer() {
  mute_timer_.expires_at(muted_until_);  // cancels an earlier wait (its handler sees the error)
  mute_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec || self->closed_) return;
    if (self->muted()) {  // extended meanwhile
      self->arm_mute_timer();
      return;
    }
    if (self->held_frame_) {
      self->reading_ = false;
      self->on_frame(std::move(self->held_frame_));
      return;
    }
    self->maybe_resume_reading();
  });
}

void Connection::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  // Dropped as close() returns (its callers hold the connection), not in the middle of it.
  const auto waiting = std::move(pool_wait_self_);
  frame_timer_.cancel();
  mute_timer_.cancel();
  held_frame_.reset();
  body_.reset();  // gives its bytes back to the pool
  dispatcher_.connection_closed();
  if (!reason.empty()) spdlog::debug("connection {} closed: {}", peer_, reason);
  boost::system::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  slots_.clear();
  // Nothing queued will be written now; the frames themselves go with the last reference.
  add_queued({-queued_response_bytes_.load(std::memory_order_relaxed),
              -queued_response_memory_.load(std::memory_order_relaxed)});
  writing_bytes_ = {};
}

}  // namespace strata::broker
