// libFuzzer target: request framing through a real Connection on a loopback socket. The input is
// the byte stream a client sends (then it half-closes); a dispatcher answers each frame now, later
// from a posted handler, not at all (acks=0) or by closing, depending on its correlation id. The
// connection must never crash or trip a sanitizer, frames larger than socket.request.max.bytes
// must close it, and the responses the client reads must be whole frames in request order.
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "broker/net/asio.h"
#include "broker/net/connection.h"
#include "broker/net/dispatcher.h"

namespace {

namespace asio = boost::asio;
using strata::broker::RequestFrame;
using strata::broker::Responder;
using strata::broker::ResponseFrame;

// Answers with a frame holding the correlation id, so the client can check the order.
ResponseFrame answer(int32_t correlation_id) {
  ResponseFrame f;
  f.bytes = {0, 0, 0, 4};
  for (int shift = 24; shift >= 0; shift -= 8) {
    f.bytes.push_back(static_cast<uint8_t>(static_cast<uint32_t>(correlation_id) >> shift));
  }
  return f;
}

class FuzzDispatcher : public strata::broker::Dispatcher {
 public:
  explicit FuzzDispatcher(asio::io_context& io) : io_(io) {}
  std::vector<int32_t> answered;  // correlation ids given a response, in request order
  bool dispatch(std::shared_ptr<RequestFrame> frame, Responder responder) override {
    const int32_t id = frame->correlation_id;
    const uint32_t what = static_cast<uint32_t>(id) % 4;
    if (what == 0 || what == 2) answered.push_back(id);  // dispatch runs in request order
    switch (what) {
      case 0:
        responder.send(answer(id));
        break;
      case 1:
        responder.no_response();
        break;
      case 2:
        asio::post(io_, [responder, id] { responder.send(answer(id)); });
        break;
      default:
        responder.close("fuzz: close on request");
        break;
    }
    return true;
  }

 private:
  asio::io_context& io_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {  // closing a connection is logged; millions of runs need not be
    spdlog::set_level(spdlog::level::off);
    return true;
  }();
  (void)quiet;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::address_v4::loopback(), 0});
  asio::ip::tcp::socket client(io);
  client.connect(acceptor.local_endpoint());
  asio::ip::tcp::socket server_side(io);
  acceptor.accept(server_side);

  FuzzDispatcher dispatcher(io);
  auto limits = std::make_shared<strata::broker::ConnectionLimits>();
  limits->max_request_bytes = 1 << 20;
  limits->request_read_timeout_ms = 200;
  limits->pool = std::make_shared<strata::broker::RequestMemoryPool>(4 << 20);
  auto conn =
      std::make_shared<strata::broker::Connection>(std::move(server_side), dispatcher, limits);
  conn->start();

  std::vector<uint8_t> input(data, data + size);
  asio::async_write(client, asio::buffer(input), [&](boost::system::error_code, size_t) {
    boost::system::error_code ec;
    client.shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  });
  std::vector<uint8_t> got;
  std::vector<uint8_t> buf(65536);
  bool eof = false;
  std::function<void()> read_more = [&] {
    client.async_read_some(asio::buffer(buf), [&](boost::system::error_code ec, size_t n) {
      got.insert(got.end(), buf.begin(), buf.begin() + static_cast<long>(n));
      if (ec) {
        eof = true;
        return;
      }
      read_more();
    });
  };
  read_more();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!eof && std::chrono::steady_clock::now() < deadline) {
    io.run_for(std::chrono::milliseconds(20));
  }
  // Whatever arrived is whole frames, answering a prefix of the answered requests in order.
  size_t pos = 0, n = 0;
  while (pos + 8 <= got.size()) {
    const uint32_t len = (uint32_t{got[pos]} << 24) | (uint32_t{got[pos + 1]} << 16) |
                         (uint32_t{got[pos + 2]} << 8) | got[pos + 3];
    const int32_t id =
        static_cast<int32_t>((uint32_t{got[pos + 4]} << 24) | (uint32_t{got[pos + 5]} << 16) |
                             (uint32_t{got[pos + 6]} << 8) | got[pos + 7]);
    if (len != 4 || n >= dispatcher.answered.size() || dispatcher.answered[n] != id) {
      __builtin_trap();
    }
    pos += 8;
    ++n;
  }
  conn->drain();
  boost::system::error_code ec;
  client.close(ec);
  io.run_for(std::chrono::milliseconds(10));
  return 0;
}
