#include "broker/net/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>

namespace strata::broker {

namespace {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
}  // namespace

Result<HttpResponse> http_call(const std::string& host, uint16_t port, const HttpRequest& req,
                               const HttpCallOptions& options) {
  const std::string where = host + ":" + std::to_string(port);
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  boost::system::error_code ec;
  tcp::resolver resolver(ioc);
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) return Status(Errc::io_error, where + ": " + ec.message());
  // Asynchronous operations run to completion on this call's own io_context: the stream's
  // expiry (the timeouts) only applies to asynchronous operations.
  boost::system::error_code result = asio::error::would_block;
  stream.expires_after(std::chrono::milliseconds(options.connect_timeout_ms));
  stream.async_connect(endpoints,
                       [&](boost::system::error_code e, const tcp::endpoint&) { result = e; });
  ioc.run();
  if (result) return Status(Errc::io_error, where + ": connect: " + result.message());

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
  result = asio::error::would_block;
  stream.expires_after(std::chrono::milliseconds(options.request_timeout_ms));
  http::async_write(stream, out, [&](boost::system::error_code e, size_t) {
    if (e) {
      result = e;
      return;
    }
    http::async_read(stream, buf, parser,
                     [&](boost::system::error_code e2, size_t) { result = e2; });
  });
  ioc.restart();
  ioc.run();
  if (result) return Status(Errc::unavailable, where + ": no answer: " + result.message());
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

}  // namespace strata::broker
