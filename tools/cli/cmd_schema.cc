// strata schema ...: the embedded Schema Registry through its REST API (Confluent's, on the
// broker's schema.registry.listener; docs/schema-registry.md). A small synchronous HTTP/1.1 client
// on Boost.Beast (HTTPS with --registry-ca-file, basic auth with --registry-user): one request per
// command, no keep-alive needed. Registry errors exit 1 with
// SCHEMA_REGISTRY_<error_code>: <message>; an unreachable registry exits 3.
#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>

#include "protocol/base/base64.h"
#include "protocol/base/percent_escape.h"
#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;
namespace ssl = boost::asio::ssl;

struct SchemaOpts {
  std::string subject;
  std::string file;  // register: the schema text ("-" = stdin)
  std::string type = "AVRO";
  std::string version = "latest";
  bool permanent = false;
  int32_t id = 0;
};

// How to reach the registry: --registry URL (http:// or https://), --registry-ca-file for
// https (else the system's CAs), basic auth with --registry-user and a password.
struct RegistryConn {
  std::string url = "http://127.0.0.1:8081";
  std::string user;
  std::optional<std::string> password;
  std::optional<std::string> password_file;
  std::string ca_file;
};

struct RegistryAddress {
  bool https = false;
  std::string host;
  std::string port;
};

Result<RegistryAddress> registry_address(const std::string& url) {
  RegistryAddress a;
  std::string rest = url;
  if (rest.rfind("https://", 0) == 0) {
    a.https = true;
    rest = rest.substr(8);
  } else if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return Status(Errc::invalid_argument, "--registry must be http(s)://HOST:PORT, not " + url);
  }
  a.host = rest.substr(0, colon);
  a.port = rest.substr(colon + 1);
  return a;
}

// "Basic <base64 user:password>", "" without --registry-user.
Result<std::string> authorization(const RegistryConn& conn) {
  if (conn.user.empty()) return std::string();
  std::string password;
  if (conn.password.has_value() == conn.password_file.has_value()) {
    return Status(Errc::invalid_argument,
                  "--registry-user needs exactly one of --registry-password or "
                  "--registry-password-file");
  }
  if (conn.password) {
    password = *conn.password;
  } else {
    std::ifstream in(*conn.password_file);
    if (!in || !std::getline(in, password)) {
      return Status(Errc::invalid_argument, "cannot read a password from " + *conn.password_file);
    }
    if (!password.empty() && password.back() == '\r') password.pop_back();
  }
  return "Basic " + base64_encode(conn.user + ":" + password);
}

// Writes `req` and reads the whole answer on a connected (for TLS, handshaken) stream.
template <typename Stream>
http::response<http::string_body> exchange(Stream& stream, http::request<http::string_body>& req) {
  http::write(stream, req);
  beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  http::read(stream, buf, parser);
  return parser.release();
}

// One request -> the parsed JSON body; a non-2xx answer -> SCHEMA_REGISTRY_<code>: <message>.
Result<json> call(const Cli& cli, const RegistryConn& conn, http::verb verb,
                  const std::string& target, const std::optional<json>& body = std::nullopt) {
  auto addr = registry_address(conn.url);
  if (!addr.ok()) return addr.status();
  auto auth = authorization(conn);
  if (!auth.ok()) return auth.status();
  try {
    boost::asio::io_context io;
    http::request<http::string_body> req(verb, target, 11);
    req.set(http::field::host, addr->host);
    req.set(http::field::accept, "application/vnd.schemaregistry.v1+json");
    if (!auth->empty()) req.set(http::field::authorization, *auth);
    if (body) {
      req.set(http::field::content_type, "application/vnd.schemaregistry.v1+json");
      req.body() = body->dump();
      req.prepare_payload();
    }
    tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(addr->host, addr->port);
    http::response<http::string_body> res;
    if (addr->https) {
      ssl::context ctx(ssl::context::tls_client);
      if (conn.ca_file.empty()) {
        ctx.set_default_verify_paths();
      } else {
        ctx.load_verify_file(conn.ca_file);
      }
      beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
      stream.set_verify_mode(ssl::verify_peer);
      stream.set_verify_callback(ssl::host_name_verification(addr->host));
      boost::system::error_code not_ip;
      boost::asio::ip::make_address(addr->host, not_ip);
      if (not_ip) SSL_set_tlsext_host_name(stream.native_handle(), addr->host.c_str());
      beast::get_lowest_layer(stream).expires_after(std::chrono::milliseconds(cli.timeout_ms));
      beast::get_lowest_layer(stream).connect(endpoints);
      stream.handshake(ssl::stream_base::client);
      res = exchange(stream, req);
    } else {
      beast::tcp_stream stream(io);
      stream.expires_after(std::chrono::milliseconds(cli.timeout_ms));
      stream.connect(endpoints);
      res = exchange(stream, req);
      beast::error_code ec;
      stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    }
    json j = json::parse(res.body(), nullptr, /*allow_exceptions=*/false);
    const unsigned status = res.result_int();
    if (status / 100 != 2) {
      const int code = j.is_object() && j.contains("error_code") && j["error_code"].is_number()
                           ? j["error_code"].get<int>()
                           : static_cast<int>(status);
      const std::string msg = j.is_object() && j.contains("message") && j["message"].is_string()
                                  ? j["message"].get<std::string>()
                                  : res.body();
      return Status(Errc::invalid_argument, "SCHEMA_REGISTRY_" + std::to_string(code) + ": " + msg);
    }
    if (j.is_discarded()) {
      return Status(Errc::corruption, "SCHEMA_REGISTRY: an answer that is not JSON: " + res.body());
    }
    return j;
  } catch (const std::exception& e) {
    return Status(Errc::io_error, "CONNECTION: schema registry " + conn.url + ": " + e.what());
  }
}

// Path segments are sent percent-encoded (subjects may hold any character).
std::string segment(const std::string& s) { return percent_escape(s, url_unreserved); }

int print_or_fail(Cli& cli, const Result<json>& r, const std::function<void(const json&)>& text) {
  if (!r.ok()) return fail(cli, r.status());
  if (cli.json_out()) {
    print_json(*r);
  } else {
    text(*r);
  }
  return kExitOk;
}

}  // namespace

void register_schema(CLI::App& app, Cli& cli) {
  auto* schema = app.add_subcommand("schema", "The broker's Schema Registry (REST, --registry)");
  schema->require_subcommand(1);
  schema->fallthrough();  // --registry may follow the subcommand
  auto registry = std::make_shared<RegistryConn>();
  schema
      ->add_option("--registry", registry->url,
                   "Schema Registry URL (the broker's schema.registry.listener)")
      ->capture_default_str();
  schema->add_option("--registry-user", registry->user,
                     "Basic auth user (a SCRAM user of the broker)");
  schema->add_option(
      "--registry-password", registry->password,
      "Its password (visible to other local users: prefer --registry-password-file)");
  // A file that is not there is a usage error (exit 2), as for the other file options.
  schema
      ->add_option("--registry-password-file", registry->password_file,
                   "A file whose first line is the password")
      ->check(CLI::ExistingFile);
  schema
      ->add_option("--registry-ca-file", registry->ca_file,
                   "PEM CA certificates for an https:// registry (default: the system's)")
      ->check(CLI::ExistingFile);
  {
    auto o = std::make_shared<SchemaOpts>();
    auto* s = schema->add_subcommand("list", "Subjects");
    on_run(s, cli, o, [registry](Cli& c, const SchemaOpts&) {
      return print_or_fail(c, call(c, *registry, http::verb::get, "/subjects"), [](const json& j) {
        for (const auto& s : j) std::cout << s.get<std::string>() << "\n";
      });
    });
  }
  {
    auto o = std::make_shared<SchemaOpts>();
    auto* s = schema->add_subcommand("register", "Register a schema under a subject");
    s->add_option("subject", o->subject)->required();
    s->add_option("--file,-f", o->file, "Schema text file (- = stdin)")->required();
    s->add_option("--type", o->type, "Schema type")
        ->check(CLI::IsMember({"AVRO", "JSON", "PROTOBUF"}))
        ->capture_default_str();
    on_run(s, cli, o, [registry](Cli& c, const SchemaOpts& opts) {
      std::stringstream text;
      if (opts.file == "-") {
        text << std::cin.rdbuf();
      } else {
        std::ifstream in(opts.file);
        if (!in) return usage_error(c, "cannot read " + opts.file);
        text << in.rdbuf();
      }
      json body{{"schema", text.str()}};
      if (opts.type != "AVRO") body["schemaType"] = opts.type;
      auto r = call(c, *registry, http::verb::post,
                    "/subjects/" + segment(opts.subject) + "/versions", body);
      return print_or_fail(c, r, [&](const json& j) {
        std::cout << "registered " << opts.subject << ": id " << j.value("id", -1) << "\n";
      });
    });
  }
  {
    auto o = std::make_shared<SchemaOpts>();
    auto* s = schema->add_subcommand("get", "A subject's version (default: the latest)");
    s->add_option("subject", o->subject)->required();
    s->add_option("--version", o->version, "Version number or latest")->capture_default_str();
    on_run(s, cli, o, [registry](Cli& c, const SchemaOpts& opts) {
      auto r = call(c, *registry, http::verb::get,
                    "/subjects/" + segment(opts.subject) + "/versions/" + segment(opts.version));
      return print_or_fail(c, r, [](const json& j) {
        std::cout << "subject " << j.value("subject", "") << " version " << j.value("version", 0)
                  << " id " << j.value("id", 0) << " type " << j.value("schemaType", "AVRO") << "\n"
                  << j.value("schema", "") << "\n";
      });
    });
  }
  {
    auto o = std::make_shared<SchemaOpts>();
    auto* s = schema->add_subcommand("id", "The schema with a global id");
    s->add_option("id", o->id)->required();
    on_run(s, cli, o, [registry](Cli& c, const SchemaOpts& opts) {
      auto r = call(c, *registry, http::verb::get, "/schemas/ids/" + std::to_string(opts.id));
      return print_or_fail(c, r, [](const json& j) { std::cout << j.value("schema", "") << "\n"; });
    });
  }
  {
    auto o = std::make_shared<SchemaOpts>();
    auto* s = schema->add_subcommand("delete",
                                     "Delete a subject, or one version (soft unless --permanent)");
    s->add_option("subject", o->subject)->required();
    s->add_option("--version", o->version, "One version (number or latest); default: the subject");
    s->add_flag("--permanent", o->permanent, "Hard delete (after a soft delete)");
    on_run(s, cli, o, [registry, s](Cli& c, const SchemaOpts& opts) {
      std::string target = "/subjects/" + segment(opts.subject);
      if (s->count("--version") > 0) target += "/versions/" + segment(opts.version);
      if (opts.permanent) target += "?permanent=true";
      auto r = call(c, *registry, http::verb::delete_, target);
      return print_or_fail(c, r, [&](const json& j) {
        std::cout << "deleted " << opts.subject << " version(s): " << j.dump() << "\n";
      });
    });
  }
}

}  // namespace strata::cli
