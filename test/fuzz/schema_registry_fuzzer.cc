// libFuzzer target: the embedded Schema Registry's parsers on arbitrary bytes. First byte 0 mod 8:
// the input is an Avro schema, 2 mod 8: a JSON Schema (optionally followed by a NUL and a JSON
// value checked against it), 6 mod 8: a Protobuf schema (.proto text or a base64 descriptor),
// optionally followed by a NUL and a framed value's bytes after its schema id — parsing must never
// crash, and a schema it accepts must print a normalized text that parses back to itself and be
// compatible with itself both ways; a value that decodes is an object, and what the row encoder
// makes of it decodes and encodes to the same bytes. 4 mod 8: an Avro schema line and a datum for
// the binary codec. Odd: the input is a REST request (a method, a path line, a body) answered by a
// registry over an in-memory `_schemas` behind the topic-ACL guard (registry_access.h), as a user
// allowed to write every topic or as one with no ACL at all — any answer but a crash, never a 5xx
// other than a store error, and the user without ACLs never writes anything. Every input is also a
// basic-auth header for its parser.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "broker/net/http_server.h"
#include "broker/schema/registry_access.h"
#include "broker/schema/registry_http.h"
#include "broker/schema/schema_registry.h"
#include "broker/security/acl.h"
#include "broker/security/security_services.h"
#include "protocol/schema/avro_codec.h"
#include "protocol/schema/avro_schema.h"
#include "protocol/schema/json_schema.h"
#include "protocol/schema/protobuf_codec.h"
#include "protocol/schema/protobuf_schema.h"

namespace {

using namespace strata;

// Appends complete inline (the registry only waits on a promise the callback sets); the log is
// dropped now and then to bound memory.
class SyncJournal : public broker::group::GroupJournal {
 public:
  int32_t partitions() const override { return 1; }
  bool partitions_fixed() const override { return true; }
  size_t max_write_bytes() const override { return std::numeric_limits<size_t>::max(); }
  void append(int32_t, std::vector<broker::group::JournalRecord> records,
              AppendDone done) override {
    if (log_.size() > 10000) log_.clear();
    ++appends;
    for (auto& r : records) log_.push_back(std::move(r));
    done(protocol::ErrorCode::none, 0);
  }
  Status replay(int32_t,
                const std::function<Status(const broker::group::JournalRecord&)>& fn) override {
    for (const auto& r : log_) STRATA_RETURN_IF_ERROR(fn(r));
    return Status::Ok();
  }
  void run_async(std::function<void()> fn) override { fn(); }
  size_t appends = 0;

 private:
  std::vector<broker::group::JournalRecord> log_;
};

// Kafka's ACL rules (AclStore): alice may do everything; nobody has no ACL.
class Acls : public broker::security::Authorizer {
 public:
  Acls() {
    broker::security::AclBinding b;
    b.resource_name = broker::security::kWildcard;
    b.principal = "User:alice";
    b.operation = broker::security::AclOperation::all;
    broker::security::AclBinding c = b;  // the global config and mode too
    c.resource_type = broker::security::ResourceType::cluster;
    c.resource_name = broker::security::kClusterName;
    store_.add({b, c});
  }
  bool authorize(const std::string& principal, const std::string& host,
                 broker::security::AclOperation op, broker::security::ResourceType type,
                 const std::string& name) const override {
    return store_.authorize(principal, host, op, type, name);
  }
  bool authorize_any(const std::string& principal, const std::string& host,
                     broker::security::AclOperation op,
                     broker::security::ResourceType type) const override {
    return store_.authorize_any(principal, host, op, type);
  }
  std::vector<broker::security::AclBinding> acls(
      const broker::security::AclFilter& f) const override {
    return store_.list(f);
  }
  Status create(const std::vector<broker::security::AclBinding>&) override { return Status::Ok(); }
  Result<std::vector<broker::security::AclBinding>> remove(
      const broker::security::AclFilter&) override {
    return std::vector<broker::security::AclBinding>{};
  }

 private:
  broker::security::AclStore store_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using protocol::schema::AvroSchema;
  if (size == 0) return 0;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (auto c = broker::HttpServer::basic_credentials(input)) {
    if (c->first.find(':') != std::string::npos)
      __builtin_trap();  // the user ends at the first ':'
  }
  if ((data[0] & 7) == 6) {
    const size_t nul = input.find('\0');
    auto s = protocol::schema::ProtobufSchema::parse(std::string_view(input).substr(0, nul));
    if (!s.ok()) return 0;
    const std::string normalized = s->normalized();
    auto again = protocol::schema::ProtobufSchema::parse(normalized);
    if (!again.ok() || again->normalized() != normalized) __builtin_trap();
    if (!protocol::schema::protobuf_schema_incompatibilities(*s, *s).empty()) __builtin_trap();
    if (nul == std::string::npos) return 0;
    auto v = protocol::schema::protobuf_decode(
        *s, std::span(reinterpret_cast<const uint8_t*>(input.data()) + nul + 1,
                      input.size() - nul - 1));
    if (v.ok() && (!v->is_object() || v->dump().empty())) __builtin_trap();
    if (!v.ok()) return 0;
    // The row encoder (Protobuf table schemas) on what decodes: when it takes the value as the
    // first message, decoding its bytes gives a value it encodes to the same bytes.
    auto row = protocol::schema::protobuf_encode_row(*s, *v);
    if (!row.ok()) return 0;
    auto back = protocol::schema::protobuf_decode(
        *s, std::span(reinterpret_cast<const uint8_t*>(row->data()), row->size()));
    if (!back.ok()) __builtin_trap();
    auto reencoded = protocol::schema::protobuf_encode_row(*s, *back);
    if (!reencoded.ok() || *reencoded != *row) __builtin_trap();
    return 0;
  }
  if ((data[0] & 3) == 2) {
    const size_t nul = input.find('\0');
    auto s = protocol::schema::JsonSchema::parse(std::string_view(input).substr(0, nul));
    if (!s.ok()) return 0;
    if (nul != std::string::npos) {
      // A value checked against the schema: an answer either way, in bounded time and stack.
      const auto value = nlohmann::json::parse(input.substr(nul + 1), nullptr, false);
      if (!value.is_discarded()) (void)s->validate_value(value);
      return 0;
    }
    const std::string normalized = s->normalized_json();
    auto again = protocol::schema::JsonSchema::parse(normalized);
    if (!again.ok() || again->normalized_json() != normalized) __builtin_trap();
    // Compatible with itself, unless the diff ran out of its work budget (then it says so).
    const auto self = protocol::schema::json_schema_incompatibilities(*s, *s);
    if (!self.empty() && self[0].rfind("SCHEMA_TOO_COMPLEX_TO_COMPARE", 0) != 0) __builtin_trap();
    return 0;
  }
  if ((data[0] & 7) == 4) {
    // Avro's binary encoding: a schema line, then a datum decoded with it; what decodes must
    // encode and decode back to the same value.
    const size_t nl = input.find('\n');
    if (nl == std::string::npos) return 0;
    auto s = AvroSchema::parse(std::string_view(input).substr(0, nl));
    if (!s.ok()) return 0;
    auto v = protocol::schema::avro_decode(
        *s,
        std::span(reinterpret_cast<const uint8_t*>(input.data()) + nl + 1, input.size() - nl - 1));
    if (!v.ok()) return 0;
    auto bytes = protocol::schema::avro_encode(*s, *v);
    if (!bytes.ok()) __builtin_trap();
    auto again = protocol::schema::avro_decode(
        *s, std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()));
    if (!again.ok() || *again != *v) __builtin_trap();
    return 0;
  }
  if ((data[0] & 1) == 0) {
    auto s = AvroSchema::parse(input);
    if (!s.ok()) return 0;
    (void)s->canonical_form();
    const std::string normalized = s->normalized_json();
    auto again = AvroSchema::parse(normalized);
    if (!again.ok() || again->normalized_json() != normalized) __builtin_trap();
    if (!protocol::schema::avro_incompatibilities(*s, *s).empty()) __builtin_trap();
    return 0;
  }
  static SyncJournal journal;
  static broker::schema::SchemaRegistry registry(journal);
  static Acls acls;
  static const broker::HttpHandler guarded = broker::schema::authorized_registry(
      [](const broker::HttpRequest& r) {
        return broker::schema::handle_registry_request(registry, r);
      },
      &acls);
  static const char* kMethods[] = {"GET", "POST", "PUT", "DELETE"};
  broker::HttpRequest req;
  req.method = kMethods[(data[0] >> 1) & 3];
  const size_t nl = input.find('\n');
  const std::string target = input.substr(0, nl);
  req.body = nl == std::string::npos ? "" : input.substr(nl + 1);
  const size_t q = target.find('?');
  req.path = target.substr(0, q);
  if (q != std::string::npos) req.query = target.substr(q + 1);
  req.user = (data[0] & 16) ? "alice" : "nobody";
  req.peer = "127.0.0.1";
  const size_t appends = journal.appends;
  const broker::HttpResponse r = guarded(req);
  if (r.status < 200 || r.status >= 600) __builtin_trap();
  if (req.user == "nobody" && journal.appends != appends) __builtin_trap();
  return 0;
}
