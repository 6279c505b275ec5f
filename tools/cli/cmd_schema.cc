// strata schema ...: the embedded Schema Registry through its REST API (Confluent's, on the
// broker's schema.registry.listener; docs/schema-registry.md). A small synchronous HTTP/1.1 client
// on Boost.Beast: one request per command, no keep-alive needed. Registry errors exit 1 with
// SCHEMA_REGISTRY_<error_code>: <message>; an unreachable registry exits 3.
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>

#include "protocol/base/percent_escape.h"
#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

struct SchemaOpts {
  std::string subject;
  std::string file;  // register: the schema text ("-" = stdin)
  std::string type = "AVRO";
  std::string version = "latest";
  bool permanent = false;
  int32_t id = 0;
};

// The --registry URL's host and port ("http://h:p", the scheme optional).
Result<std::pair<std::string, std::string>> registry_address(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("https://", 0) == 0) {
    return Status(Errc::invalid_argument, "--registry: https is not supported by the CLI yet");
  }
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return Status(Errc::invalid_argument, "--registry must be http://HOST:PORT, not " + url);
  }
  return std::make_pair(rest.substr(0, colon), rest.substr(colon + 1));
}

// One request -> the parsed JSON body; a non-2xx answer -> SCHEMA_REGISTRY_<code>: <message>.
Result<json> call(const Cli& cli, const std::string& registry, http::verb verb,
                  const std::string& target, const std::optional<json>& body = std::nullopt) {
  auto addr = registry_address(registry);
  if (!addr.ok()) return addr.status();
  try {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::milliseconds(cli.timeout_ms));
    tcp::resolver resolver(io);
    stream.connect(resolver.resolve(addr->first, addr->second));
    http::request<http::string_body> req(verb, target, 11);
    req.set(http::field::host, addr->first);
    req.set(http::field::accept, "application/vnd.schemaregistry.v1+json");
    if (body) {
      req.set(http::field::content_type, "application/vnd.schemaregistry.v1+json");
      req.body() = body->dump();
      req.prepare_payload();
    }
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64u << 20);
    http::read(stream, buf, parser);
    const auto& res = parser.get();
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
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
    return Status(Errc::io_error, "CONNECTION: schema registry " + registry + ": " + e.what());
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
  auto registry = std::make_shared<std::string>("http://127.0.0.1:8081");
  schema
      ->add_option("--registry", *registry,
                   "Schema Registry URL (the broker's schema.registry.listener)")
      ->capture_default_str();
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
