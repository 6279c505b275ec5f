// A client that pipelines requests and never reads its responses: the connection stops reading
// once its unwritten responses reach connection.max.queued.response.bytes (memory and file ranges
// alike), other connections keep being served, and once the client reads, every request is
// answered in order.
#include "broker/net/connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "broker/net/asio.h"
#include "broker/net/dispatcher.h"

namespace strata::broker {
namespace {

namespace asio = boost::asio;

constexpr uint32_t kPayload = 256 * 1024;  // bytes after the correlation id, per response
constexpr int64_t kBudget = 1 << 20;

// Answers at once (on the connection's strand, so the response is queued before the next read):
// even correlation ids with an in-memory payload, odd ones with a file range (sendfile).
class BigDispatcher : public Dispatcher {
 public:
  explicit BigDispatcher(int fd) : fd_(fd) {}
  std::atomic<int> dispatched{0};
  // The largest process-wide queued response bytes seen when a request was read.
  std::atomic<int64_t> max_queued_at_read{0};
  bool dispatch(std::shared_ptr<RequestFrame> frame, Responder responder) override {
    const int64_t q = Connection::total_queued_response_bytes();
    if (q > max_queued_at_read.load()) max_queued_at_read.store(q);
    dispatched.fetch_add(1);
    const auto id = static_cast<uint32_t>(frame->correlation_id);
    ResponseFrame f;
    const uint32_t size = 4 + kPayload;
    for (uint32_t v : {size, id}) {
      for (int shift = 24; shift >= 0; shift -= 8) f.bytes.push_back(uint8_t(v >> shift));
    }
    if (id % 2 == 0) {
      f.bytes.resize(f.bytes.size() + kPayload, uint8_t(id));
    } else {
      protocol::RecordsPart part;
      part.fd = fd_;
      part.length = kPayload;
      f.external.emplace_back(f.bytes.size(), part);
    }
    responder.send(std::move(f));
    return true;
  }

 private:
  int fd_;
};

std::vector<uint8_t> request(int32_t id) {
  std::vector<uint8_t> b = {0, 0, 0, 8, 0, 1, 0, 0};
  for (int shift = 24; shift >= 0; shift -= 8) b.push_back(uint8_t(uint32_t(id) >> shift));
  return b;
}

// Reads one response and returns its correlation id (checking the payload's length).
int32_t read_response(asio::ip::tcp::socket& s) {
  uint8_t head[8];
  asio::read(s, asio::buffer(head));
  const uint32_t size =
      (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) | (uint32_t{head[2]} << 8) | head[3];
  EXPECT_EQ(size, 4 + kPayload);
  std::vector<uint8_t> body(size - 4);
  asio::read(s, asio::buffer(body));
  return static_cast<int32_t>((uint32_t{head[4]} << 24) | (uint32_t{head[5]} << 16) |
                              (uint32_t{head[6]} << 8) | head[7]);
}

TEST(Connection, ClientThatNeverReadsIsBoundedByTheResponseBudget) {
  FILE* tmp = std::tmpfile();
  ASSERT_NE(tmp, nullptr);
  std::vector<uint8_t> file_bytes(kPayload, 0x5a);
  ASSERT_EQ(std::fwrite(file_bytes.data(), 1, file_bytes.size(), tmp), file_bytes.size());
  std::fflush(tmp);
  BigDispatcher dispatcher(fileno(tmp));

  asio::io_context io;
  auto work = asio::make_work_guard(io);
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  auto limits = std::make_shared<ConnectionLimits>();
  limits->max_queued_response_bytes = kBudget;
  std::vector<std::shared_ptr<Connection>> conns;
  auto connect = [&] {
    asio::ip::tcp::socket client(io);
    client.open(asio::ip::tcp::v4());
    client.set_option(asio::socket_base::receive_buffer_size(64 * 1024));  // little in flight
    client.connect(acceptor.local_endpoint());
    asio::ip::tcp::socket server_side(io);
    acceptor.accept(server_side);
    server_side.set_option(asio::socket_base::send_buffer_size(64 * 1024));
    conns.push_back(std::make_shared<Connection>(std::move(server_side), dispatcher, limits));
    conns.back()->start();
    return client;
  };
  auto stuck = connect();
  std::thread runner([&] { io.run(); });

  // 200 requests (~51 MiB of responses, far past the budget and the socket buffers), never read.
  constexpr int kRequests = 200;
  std::vector<uint8_t> all;
  for (int i = 0; i < kRequests; ++i) {
    auto r = request(i);
    all.insert(all.end(), r.begin(), r.end());
  }
  asio::write(stuck, asio::buffer(all));
  while (Connection::total_queued_response_bytes() < kBudget) std::this_thread::yield();
  // Time only lets a broken bound show itself; the assertions below do not depend on it.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_LT(dispatcher.max_queued_at_read.load(), kBudget);
  EXPECT_LE(conns[0]->queued_response_bytes(), kBudget + 8 + kPayload);
  EXPECT_LT(dispatcher.dispatched.load(), kRequests);

  // Another client is served meanwhile (its one response fits the budget of its own connection).
  {
    auto other = connect();
    asio::write(other, asio::buffer(request(1000)));
    EXPECT_EQ(read_response(other), 1000);
  }

  // Once the stuck client reads, it gets every response, in order, and the queue empties.
  for (int i = 0; i < kRequests; ++i) ASSERT_EQ(read_response(stuck), i);
  EXPECT_EQ(dispatcher.dispatched.load(), kRequests + 1);
  while (Connection::total_queued_response_bytes() != 0) std::this_thread::yield();

  for (auto& c : conns) c->drain();
  work.reset();
  stuck.close();
  io.stop();
  runner.join();
  std::fclose(tmp);
}

}  // namespace
}  // namespace strata::broker
