#include "broker/net/http_client.h"

// clang-format off
#include "broker/net/asio_ssl.h"
// clang-format on
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <optional>

namespace strata::broker {

namespace {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Runs `start` (which posts asynchronous work) on `ioc` to completion: the stream's expiry (the
// timeouts) only applies to asynchronous operations.
template <typename Start>
boost::system::error_code run(asio::io_context& ioc, Start&& start) {
  boost::system::error_code result = asio::error::would_block;
  start(result);
  ioc.restart();
  ioc.run();
  return result;
}

// The request written and the whole answer read on a connected (and, for TLS, handshaken)
// stream.
template <typename Stream>
Result<HttpResponse> exchange(asio::io_context& ioc, Stream& stream, beast::tcp_stream& lowest,
                              const std::string& where, const HttpRequest& req,
                              const HttpCallOptions& options) {
  http::verb verb = http::string_to_verb(req.method);
  if (verb == http::verb::unknown) return Status(Errc::invalid_argument, "method " + req.method);
  http::request<http::string_body> out{
      verb, req.query.empty() ? req.path : req.path + "?" + req.query, 11};
  for (const auto& [name, value] : req.headers) {
    if (name == "host" || name == "content-length" || name == "connection") continue;
    out.insert(name, value);
  }
  out.set(http::field::host, where);
  out.body() = req.body;
  out.prepare_payload();
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(options.max_body_bytes);
  if (verb == http::verb::head) parser.skip(true);  // a Content-Length and no body
  lowest.expires_after(std::chrono::milliseconds(options.request_timeout_ms));
  auto ec = run(ioc, [&](boost::system::error_code& result) {
    http::async_write(stream, out, [&](boost::system::error_code e, size_t) {
      if (e) {
        result = e;
        return;
      }
      http::async_read(stream, buf, parser,
                       [&](boost::system::error_code e2, size_t) { result = e2; });
    });
  });
  if (ec) return Status(Errc::unavailable, where + ": no answer: " + ec.message());
  const auto& answer = parser.get();
  HttpResponse resp;
  resp.status = static_cast<int>(answer.result_int());
  resp.body = answer.body();
  for (const auto& field : answer) {
    if (field.name() == http::field::content_type) {
      resp.content_type = std::string(field.value());
    } else if (field.name() != http::field::content_length &&
               field.name() != http::field::connection && field.name() != http::field::server &&
               field.name() != http::field::date) {
      resp.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
  }
  return resp;
}

}  // namespace

Result<HttpResponse> http_call(const std::string& host, uint16_t port, const HttpRequest& req,
                               const HttpCallOptions& options) {
  const std::string where = host + ":" + std::to_string(port);
  asio::io_context ioc;
  boost::system::error_code ec;
  tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return Status(Errc::io_error, where + ": " + ec.message());
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
  std::optional<beast::tcp_stream> plain;
  beast::tcp_stream* tcp_layer;
  if (options.tls) {
    tls.emplace(ioc, *options.tls);
    tcp_layer = &beast::get_lowest_layer(*tls);
  } else {
    plain.emplace(ioc);
    tcp_layer = &*plain;
  }
  tcp_layer->expires_after(std::chrono::milliseconds(options.connect_timeout_ms));
  ec = run(ioc, [&](boost::system::error_code& result) {
    tcp_layer->async_connect(
        endpoints, [&](boost::system::error_code e, const tcp::endpoint&) { result = e; });
  });
  if (ec) return Status(Errc::io_error, where + ": connect: " + ec.message());
  if (!tls) return exchange(ioc, *plain, *tcp_layer, where, req, options);

  // The peer's certificate must name the host we dialled (an IP address as an IP SAN).
  tls->set_verify_mode(asio::ssl::verify_peer);
  tls->set_verify_callback(asio::ssl::host_name_verification(host));
  boost::system::error_code parse_ec;
  asio::ip::make_address(host, parse_ec);
  if (parse_ec) SSL_set_tlsext_host_name(tls->native_handle(), host.c_str());  // SNI: names only
  ec = run(ioc, [&](boost::system::error_code& result) {
    tls->async_handshake(asio::ssl::stream_base::client,
                         [&](boost::system::error_code e) { result = e; });
  });
  // Nothing was sent: another broker may be asked.
  if (ec) return Status(Errc::io_error, where + ": TLS handshake: " + ec.message());
  return exchange(ioc, *tls, *tcp_layer, where, req, options);
}

}  // namespace strata::broker
