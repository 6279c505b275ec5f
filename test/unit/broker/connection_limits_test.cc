// The request pool (queued.max.request.bytes) against a model, a trickling client that holds only
// the bytes it sent, and the idle reaper closing a connection whose client stopped reading.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "broker/net/asio.h"
#include "broker/net/connection.h"
#include "broker/net/dispatcher.h"
#include "broker/net/limits.h"

namespace strata::broker {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// Random reservations and releases by a few readers against a model of the rule: a reader gets
// its bytes at once when nobody waits and they fit (or it holds everything taken); otherwise it
// waits, and waiters are granted strictly in order as soon as the head fits.
TEST(RequestMemoryPool, RandomReservationsMatchTheModel) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    constexpr int64_t kCapacity = 1000;
    constexpr int kReaders = 6;
    RequestMemoryPool pool(kCapacity);
    std::vector<int64_t> held(kReaders, 0);
    std::vector<bool> waiting(kReaders, false);
    std::vector<int> granted;  // reader ids, in the order the pool granted them
    struct ModelWaiter {
      int reader;
      int64_t bytes;
      int64_t held;
    };
    int64_t model_used = 0;
    std::deque<ModelWaiter> model_queue;
    std::vector<int> model_granted;
    auto fits = [&](int64_t bytes, int64_t h) {
      return model_used + bytes <= kCapacity || model_used == h;
    };
    for (int step = 0; step < 2000; ++step) {
      const int r = static_cast<int>(rng() % kReaders);
      if (!waiting[r] && (held[r] == 0 || rng() % 2 == 0)) {
        const int64_t bytes = 1 + static_cast<int64_t>(rng() % 600);
        const int64_t h = held[r];
        const bool now = pool.reserve_or_wait(bytes, h, [&, r, bytes] {
          granted.push_back(r);
          held[r] += bytes;
          waiting[r] = false;
        });
        const bool model_now = model_queue.empty() && fits(bytes, h);
        ASSERT_EQ(now, model_now) << "seed " << seed << " step " << step;
        if (model_now) {
          model_used += bytes;
          held[r] += bytes;
        } else {
          model_queue.push_back({r, bytes, h});
          waiting[r] = true;
        }
      } else if (held[r] > 0) {
        const int64_t give = 1 + static_cast<int64_t>(rng() % held[r]);
        held[r] -= give;
        model_used -= give;
        while (!model_queue.empty() && fits(model_queue.front().bytes, model_queue.front().held)) {
          model_used += model_queue.front().bytes;
          model_granted.push_back(model_queue.front().reader);
          model_queue.pop_front();
        }
        pool.release(give);
      }
      ASSERT_EQ(granted, model_granted) << "seed " << seed << " step " << step;
      ASSERT_EQ(pool.used(), model_used);
      ASSERT_EQ(pool.waiters(), model_queue.size());
      int64_t sum = 0;
      for (int64_t h : held) sum += h;
      ASSERT_EQ(pool.used(), sum);
    }
  }
}

// Random takes and gives of body buffers against a model of the rule: a take of a body in range
// gets the kept buffer of the smallest capacity that holds it (the same memory), empty, or a new
// one; a give keeps a buffer of kept size while fewer than kMaxKeptBuffers and kMaxKeptBytes are
// kept, and frees it otherwise.
TEST(RequestMemoryPool, KeptBodyBuffersMatchTheModel) {
  using P = RequestMemoryPool;
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    std::mt19937 rng(seed);
    P pool(-1);
    std::multimap<size_t, const uint8_t*> model;  // capacity → the buffer's memory
    size_t model_bytes = 0;
    std::vector<BodyBytes> in_use;
    for (int step = 0; step < 2000; ++step) {
      if (in_use.empty() || rng() % 2 == 0) {
        // Sizes from 1 KiB to 16 MiB, about as many of each power of two.
        const size_t size = (size_t{1} << (10 + rng() % 15)) + rng() % 4096;
        BodyBytes b = pool.take_buffer(size);
        ASSERT_TRUE(b.empty());
        auto fit = model.lower_bound(size);
        if (size < P::kMinKeptBuffer / 4 || size > P::kMaxKeptBuffer || fit == model.end()) {
          ASSERT_EQ(b.capacity(), 0u) << "seed " << seed << " step " << step;
          b.reserve(size);  // as the connection grows it (never past the body's size)
        } else {
          ASSERT_EQ(b.capacity(), fit->first) << "seed " << seed << " step " << step;
          // Any kept buffer of that capacity: the same memory, not a copy.
          bool same = false;
          for (auto it = fit; it != model.end() && it->first == fit->first; ++it) {
            if (it->second == b.data()) {
              model_bytes -= it->first;
              model.erase(it);
              same = true;
              break;
            }
          }
          ASSERT_TRUE(same) << "seed " << seed << " step " << step;
        }
        b.resize(std::min(size, b.capacity()));  // the body arrives
        in_use.push_back(std::move(b));
      } else {
        const size_t i = rng() % in_use.size();
        BodyBytes b = std::move(in_use[i]);
        in_use[i] = std::move(in_use.back());
        in_use.pop_back();
        const size_t c = b.capacity();
        const uint8_t* data = b.data();
        pool.give_buffer(std::move(b));
        if (c >= P::kMinKeptBuffer && c <= P::kMaxKeptBuffer && model.size() < P::kMaxKeptBuffers &&
            model_bytes + c <= P::kMaxKeptBytes) {
          model.emplace(c, data);
          model_bytes += c;
        }
      }
      ASSERT_EQ(pool.kept_buffers(), model.size()) << "seed " << seed << " step " << step;
      ASSERT_EQ(pool.kept_buffer_bytes(), model_bytes) << "seed " << seed << " step " << step;
      ASSERT_LE(model_bytes, P::kMaxKeptBytes);
    }
  }
}

// Answers every request at once with an 8-byte body of its correlation id, or with `big` bytes.
class EchoDispatcher : public Dispatcher {
 public:
  std::atomic<int> dispatched{0};
  size_t big = 0;
  bool dispatch(std::shared_ptr<RequestFrame>, Responder responder) override {
    dispatched.fetch_add(1);
    const size_t body = big ? big : 4;
    ResponseFrame f;
    f.bytes.resize(4 + body, 0x11);
    const auto size = static_cast<uint32_t>(body);
    for (int i = 0; i < 4; ++i) f.bytes[i] = uint8_t(size >> (24 - 8 * i));
    responder.send(std::move(f));
    return true;
  }
};

struct Harness {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  asio::ip::tcp::acceptor acceptor{io, {asio::ip::address_v4::loopback(), 0}};
  std::shared_ptr<ConnectionLimits> limits = std::make_shared<ConnectionLimits>();
  std::vector<std::shared_ptr<Connection>> conns;
  std::thread runner;

  asio::ip::tcp::socket connect(Dispatcher& d, int rcvbuf = 0) {
    asio::ip::tcp::socket client(io);
    client.open(asio::ip::tcp::v4());
    if (rcvbuf) client.set_option(asio::socket_base::receive_buffer_size(rcvbuf));
    client.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket server_side(io);
    acceptor.accept(server_side);
    server_side.set_option(asio::socket_base::send_buffer_size(64 * 1024));
    conns.push_back(std::make_shared<Connection>(std::move(server_side), d, limits));
    conns.back()->start();
    return client;
  }
  void run() {
    runner = std::thread([this] { io.run(); });
  }
  ~Harness() {
    for (auto& c : conns) c->drain();
    work.reset();
    io.stop();
    if (runner.joinable()) runner.join();
  }
};

std::vector<uint8_t> frame_of(uint32_t size, int32_t id) {
  std::vector<uint8_t> b;
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(size >> s));
  for (uint8_t x : {0, 18, 0, 0}) b.push_back(x);  // ApiVersions v0
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(uint32_t(id) >> s));
  b.resize(4 + size, 0);
  return b;
}

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = 5000ms) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

TEST(ConnectionLimits, TricklingClientHoldsOnlyWhatItSent) {
  EchoDispatcher d;
  Harness h;
  constexpr int64_t kPool = 1 << 20;
  h.limits->pool = std::make_shared<RequestMemoryPool>(kPool);
  h.limits->request_read_timeout_ms = 0;  // only the pool is under test
  auto loris = h.connect(d);
  auto other = h.connect(d);
  h.run();
  // Announces a frame as large as the whole pool and sends 12 bytes of it.
  const auto big = frame_of(kPool, 7);
  asio::write(loris, asio::buffer(big.data(), 16));
  ASSERT_TRUE(eventually([&] { return h.limits->pool->used() > 0; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_LE(h.limits->pool->used(), 8 * 1024) << "a trickled frame took its announced size";
  // Another client's request is read and answered meanwhile.
  asio::write(other, asio::buffer(frame_of(8, 1)));
  uint8_t answer[8];
  asio::read(other, asio::buffer(answer));
  EXPECT_EQ(d.dispatched.load(), 1);
  // The rest of the frame arrives: read whole, answered, and the pool is empty again.
  asio::write(loris, asio::buffer(big.data() + 16, big.size() - 16));
  asio::read(loris, asio::buffer(answer));
  EXPECT_EQ(d.dispatched.load(), 2);
  EXPECT_TRUE(eventually([&] { return h.limits->pool->used() == 0; }));
}

// Requests one after another on a connection read into the same kept buffer: the pool keeps one,
// not one per request.
TEST(ConnectionLimits, SuccessiveBodiesReuseOneKeptBuffer) {
  EchoDispatcher d;
  Harness h;
  auto client = h.connect(d);
  h.run();
  for (int i = 1; i <= 5; ++i) {
    asio::write(client, asio::buffer(frame_of(200 * 1024, i)));
    uint8_t answer[8];
    asio::read(client, asio::buffer(answer));
    ASSERT_TRUE(eventually([&] { return h.limits->pool->kept_buffers() == 1; })) << i;
    EXPECT_GE(h.limits->pool->kept_buffer_bytes(), size_t{200 * 1024});
  }
  EXPECT_EQ(d.dispatched.load(), 5);
  std::this_thread::sleep_for(20ms);  // every frame gone: without reuse, 5 would be kept
  EXPECT_EQ(h.limits->pool->kept_buffers(), 1u);
}

TEST(ConnectionLimits, IdleReaperClosesAConnectionWhoseClientStoppedReading) {
  EchoDispatcher d;
  d.big = 8 << 20;  // far past both sockets' buffers
  Harness h;
  h.limits->idle_ms = 200;
  auto stuck = h.connect(d, 4096);
  h.run();
  const auto memory_before = Connection::total_queued_response_memory();
  asio::write(stuck, asio::buffer(frame_of(8, 1)));
  ASSERT_TRUE(eventually([&] { return d.dispatched.load() == 1; }));
  // The answer is being written and makes no progress; the sweep (the Server runs it every
  // second) closes the connection once nothing moved for idle_ms, and its memory goes back.
  EXPECT_TRUE(eventually([&] {
    h.conns[0]->close_if_idle(std::chrono::steady_clock::now());
    return h.conns[0]->closed();
  }));
  EXPECT_TRUE(
      eventually([&] { return Connection::total_queued_response_memory() == memory_before; }));
}

TEST(ConnectionLimits, SlowReaderMakingProgressIsNotIdle) {
  EchoDispatcher d;
  d.big = 4 << 20;
  Harness h;
  h.limits->idle_ms = 300;
  auto slow = h.connect(d);
  h.run();
  asio::write(slow, asio::buffer(frame_of(8, 1)));
  // Reads the answer in small pieces, pausing less than idle_ms between them, for longer than
  // idle_ms in all: every piece the broker writes counts as activity.
  std::vector<uint8_t> buf(256 * 1024);
  size_t got = 0;
  const auto start = std::chrono::steady_clock::now();
  while (got < 4 + d.big) {
    got += slow.read_some(asio::buffer(buf.data(), std::min(buf.size(), 4 + d.big - got)));
    h.conns[0]->close_if_idle(std::chrono::steady_clock::now());
    std::this_thread::sleep_for(30ms);
  }
  EXPECT_GT(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_FALSE(h.conns[0]->closed());
}

}  // namespace
}  // namespace strata::broker
