// Table schemas of confluent tables and the decoding of their writers' values; see
// table_schema.h.
#include "broker/schema/table_schema.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "broker/schema/registry_parse.h"
#include "broker/schema/schema_registry.h"
#include "pkindex/typed_row.h"
#include "protocol/pk/table_keys.h"
#include "protocol/schema/avro_codec.h"
#include "protocol/schema/json_schema.h"
#include "protocol/schema/protobuf_codec.h"

namespace strata::broker::schema {

namespace {

using nlohmann::json;
namespace pk = protocol::pk;

Status bad(std::string message) { return Status(Errc::invalid_argument, std::move(message)); }

constexpr size_t kMaxPinnedSchemaBytes = 32767;

// A registry that could not be read (not serving yet, its writer unreachable) stays unavailable —
// a retry may cure it, so Produce answers a retriable error, not INVALID_RECORD; anything else
// about a schema is the value's fault.
Status carried(const Status& cause, std::string message) {
  return Status(cause.code() == Errc::unavailable ? Errc::unavailable : Errc::invalid_argument,
                std::move(message));
}
Status not_serving(const RegistryHandle& handle, const std::string& what) {
  if (handle.none.load()) {
    return Status(Errc::invalid_argument,
                  "this broker serves no Schema Registry (schema.registry.listener): " + what);
  }
  return Status(Errc::unavailable, "the Schema Registry is not serving yet: " + what);
}

// Does a column's JSON Schema accept null? Explicitly: a type naming "null", a combination with
// a branch that does, an enum or const of null; a schema without a type or a combination accepts
// anything. A "$ref", allOf or not is not looked into: the column must say null itself.
bool accepts_null(const json& p) {
  if (p.is_boolean()) return p.get<bool>();
  if (!p.is_object()) return false;
  if (auto t = p.find("type"); t != p.end()) {
    if (t->is_string()) return *t == "null";
    return t->is_array() && std::find(t->begin(), t->end(), json("null")) != t->end();
  }
  for (const char* k : {"anyOf", "oneOf"}) {
    if (auto c = p.find(k); c != p.end() && c->is_array()) {
      return std::any_of(c->begin(), c->end(), [](const json& b) { return accepts_null(b); });
    }
  }
  if (auto e = p.find("enum"); e != p.end()) {
    return e->is_array() && std::find(e->begin(), e->end(), json(nullptr)) != e->end();
  }
  if (auto c = p.find("const"); c != p.end()) return c->is_null();
  return !p.contains("$ref") && !p.contains("allOf") && !p.contains("not");
}

std::string which_schema(const SchemaEntry& e) {
  return "the table schema (id " + std::to_string(e.id) + ")";
}

// A table schema's text as the table pins it: recovery reads it from the table's config,
// without the registry, so a schema with references is made self-contained (read through
// `source`) — an Avro schema with the referenced types written inline at their first use, a
// Protobuf file with the files it imports carried along.
Result<std::string> pinned_text(const SchemaSource& source, const SchemaEntry& e) {
  if (e.references.empty()) return e.schema;
  auto parsed = source.parsed(e.id);
  if (!parsed.ok()) {
    return bad(which_schema(e) + ": its references cannot be read: " + parsed.status().message());
  }
  if ((*parsed)->avro) return (*parsed)->avro->self_contained_json();
  if ((*parsed)->protobuf) return (*parsed)->protobuf->self_contained();
  return bad(which_schema(e) + " is neither an Avro nor a Protobuf schema");
}

// An Avro table schema: a record of nullable fields (parse_avro_table_schema), pinned.
Result<pkindex::AvroTableSchema> avro_table_schema(const SchemaSource& source,
                                                   const SchemaEntry& e) {
  auto text = pinned_text(source, e);
  if (!text.ok()) return text.status();
  auto s = pkindex::parse_avro_table_schema(*text);
  if (!s.ok()) return bad(which_schema(e) + ": " + s.status().message());
  return s;
}

// A Protobuf table schema: its first message, of fields with presence
// (parse_protobuf_table_schema), pinned.
Result<pkindex::ProtobufTableSchema> protobuf_table_schema(const SchemaSource& source,
                                                           const SchemaEntry& e) {
  auto text = pinned_text(source, e);
  if (!text.ok()) return text.status();
  auto s = pkindex::parse_protobuf_table_schema(*text);
  if (!s.ok()) return bad(which_schema(e) + ": " + s.status().message());
  return s;
}

// The columns of a table schema: the fields of its Avro record or first Protobuf message, or the
// properties of its JSON Schema object.
Result<std::set<std::string>> table_columns(const SchemaSource& source, const SchemaEntry& e) {
  const std::string which = "the table schema (id " + std::to_string(e.id) + ")";
  if (e.type == "AVRO") {
    auto s = avro_table_schema(source, e);
    if (!s.ok()) return s.status();
    return std::set<std::string>(s->columns.begin(), s->columns.end());
  }
  if (e.type == "PROTOBUF") {
    auto s = protobuf_table_schema(source, e);
    if (!s.ok()) return s.status();
    return std::set<std::string>(s->columns.begin(), s->columns.end());
  }
  if (e.type != "JSON") return bad(which + " is of type " + e.type);
  const json j = json::parse(e.schema, nullptr, false);
  if (!j.is_object() || !j.contains("properties") || !j["properties"].is_object() ||
      (j.contains("type") && j["type"] != "object")) {
    return bad(which + " must be an object schema whose properties are the columns");
  }
  if (auto r = j.find("required"); r != j.end() && r->is_array() && !r->empty()) {
    return bad(which + " must not require columns: a partial write leaves the others null");
  }
  std::set<std::string> columns;
  for (const auto& [name, p] : j["properties"].items()) {
    if (!accepts_null(p)) {
      return bad(which + ": column " + name +
                 " must accept null (\"type\": [..., \"null\"]): a partial write leaves it null");
    }
    columns.insert(name);
  }
  if (columns.empty()) return bad(which + " has no properties (columns)");
  return columns;
}

class TableDecoder : public pkindex::ConfluentDecoder {
 public:
  TableDecoder(std::shared_ptr<const RegistryHandle> handle, int32_t table_id)
      : handle_(std::move(handle)), table_id_(table_id) {}

  Result<json> decode(std::span<const uint8_t> framed) const override {
    return decode(framed, false);
  }
  Result<json> decode_at_hand(std::span<const uint8_t> framed) const override {
    return decode(framed, true);
  }

  Result<json> decode(std::span<const uint8_t> framed, bool at_hand) const {
    const SchemaSource* reg = handle_->source.load();
    if (!reg) return not_serving(*handle_, "values cannot be decoded");
    if (framed.size() < pkindex::kConfluentHeaderSize || framed[0] != 0) {
      return bad(
          "value is not in Confluent's framing (magic byte 0, a 4-byte schema id, the body)");
    }
    const auto id = static_cast<int32_t>((uint32_t{framed[1]} << 24) | (uint32_t{framed[2]} << 16) |
                                         (uint32_t{framed[3]} << 8) | uint32_t{framed[4]});
    auto table = facts(*reg, at_hand);
    if (!table.ok()) return table.status();
    auto parsed = at_hand ? reg->parsed_at_hand(id) : reg->parsed(id);
    if (!parsed.ok()) return carried(parsed.status(), parsed.status().message());
    const std::span<const uint8_t> body = framed.subspan(pkindex::kConfluentHeaderSize);
    json row;
    if ((*parsed)->avro) {
      auto v = protocol::schema::avro_decode(*(*parsed)->avro, body);
      if (!v.ok()) {
        return bad("Avro value of schema id " + std::to_string(id) +
                   " does not decode: " + v.status().message());
      }
      if (!v->is_object()) {
        return bad("schema id " + std::to_string(id) + " writes " +
                   std::string((*parsed)->avro->type_name()) + ", not a record of columns");
      }
      row = std::move(*v);
    } else if ((*parsed)->protobuf) {
      auto v = protocol::schema::protobuf_decode(*(*parsed)->protobuf, body);
      if (!v.ok()) {
        return bad("Protobuf value of schema id " + std::to_string(id) +
                   " does not decode: " + v.status().message());
      }
      row = std::move(*v);
    } else {
      // JSON Schema serializers write the JSON text right after the id; parse_row bounds its
      // nesting and wants an object.
      auto v = pkindex::typed::parse_row(body);
      if (!v.ok()) {
        return bad("JSON value of schema id " + std::to_string(id) + ": " + v.status().message());
      }
      // Serializers validate before they send; a hand-framed or mislabelled value may not be
      // what its schema says, and the table would then take a row no reader expects.
      if ((*parsed)->json) {
        if (Status st = (*parsed)->json->validate_value(*v); !st.ok()) {
          return bad("JSON value does not match its schema (id " + std::to_string(id) +
                     "): " + st.message());
        }
      }
      row = std::move(*v);
    }
    for (const auto& [name, value] : row.items()) {
      if (!(*table)->columns.count(name)) {
        return bad("field " + name + " of schema id " + std::to_string(id) +
                   " is not a column of the table schema (id " + std::to_string(table_id_) + ")");
      }
    }
    return row;
  }

  Status check_columns(const std::vector<std::string>& names) const override {
    const SchemaSource* reg = handle_->source.load();
    if (!reg) return not_serving(*handle_, "values cannot be decoded");
    auto table = facts(*reg);
    if (!table.ok()) return table.status();
    for (const auto& name : names) {
      if (!(*table)->columns.count(name)) {
        return bad("strata.columns: " + name + " is not a column of the table schema (id " +
                   std::to_string(table_id_) + ")");
      }
    }
    return Status::Ok();
  }

  Status check_row(const json& row) const override {
    const SchemaSource* reg = handle_->source.load();
    if (!reg) return not_serving(*handle_, "rows cannot be checked");
    auto table = facts(*reg);
    if (!table.ok()) return table.status();
    if (!(*table)->schema->json) return Status::Ok();
    if (Status st = (*table)->schema->json->validate_value(row); !st.ok()) {
      return bad("the row does not fit the table schema (id " + std::to_string(table_id_) +
                 "): " + st.message());
    }
    return Status::Ok();
  }

 private:
  struct TableFacts {
    std::set<std::string> columns;
    std::shared_ptr<const detail::ParsedSchema> schema;
  };

  // The table schema's columns and parsed schema, read once the registry has them (a failure
  // is not cached). Published through an atomic pointer: the produce path reads them per
  // record without a lock. The registry is read without the lock (in a cluster it is a call to
  // the registry's writer): threads that race read it twice and the first to finish installs.
  Result<const TableFacts*> facts(const SchemaSource& reg, bool at_hand = false) const {
    if (const auto* f = published_.load(std::memory_order_acquire)) return f;
    auto e = at_hand ? reg.entry_at_hand(table_id_) : reg.entry(table_id_);
    auto parsed = !e.ok()   ? Result<std::shared_ptr<const detail::ParsedSchema>>(e.status())
                  : at_hand ? reg.parsed_at_hand(table_id_)
                            : reg.parsed(table_id_);
    if (!parsed.ok()) {
      return carried(parsed.status(), "the table schema (id " + std::to_string(table_id_) +
                                          ") cannot be read: " + parsed.status().message());
    }
    auto c = table_columns(reg, *e);
    if (!c.ok()) return c.status();
    std::lock_guard lk(mu_);
    if (!facts_) {
      facts_ = TableFacts{std::move(*c), std::move(*parsed)};
      published_.store(&*facts_, std::memory_order_release);
    }
    return &*facts_;  // never changes once set
  }

  std::shared_ptr<const RegistryHandle> handle_;
  int32_t table_id_;
  mutable std::mutex mu_;
  mutable std::optional<TableFacts> facts_;
  mutable std::atomic<const TableFacts*> published_{nullptr};
};

}  // namespace

Result<std::shared_ptr<const detail::ParsedSchema>> SchemaSource::parsed_at_hand(int32_t id) const {
  return parsed(id);
}
Result<SchemaEntry> SchemaSource::entry_at_hand(int32_t id) const { return entry(id); }

// A single node's registry as a schema source.
class LocalSchemaSource : public SchemaSource {
 public:
  explicit LocalSchemaSource(const SchemaRegistry& registry) : registry_(registry) {}
  Result<std::shared_ptr<const detail::ParsedSchema>> parsed(int32_t id) const override {
    return registry_.parsed_schema(id);
  }
  Result<SchemaEntry> entry(int32_t id) const override {
    auto e = registry_.schema_by_id(id);
    if (!e.ok()) return Status(Errc::not_found, e.error.message);
    return std::move(*e.value);
  }
  Result<SchemaEntry> latest(const std::string& subject) const override {
    auto v = registry_.version(subject, "latest");
    if (!v.ok()) return Status(Errc::not_found, v.error.message);
    return std::move(v.value->second);
  }

 private:
  const SchemaRegistry& registry_;
};

std::unique_ptr<SchemaSource> local_schema_source(const SchemaRegistry& registry) {
  return std::make_unique<LocalSchemaSource>(registry);
}

Status pin_table_schema(const SchemaSource* registry, std::map<std::string, std::string>& configs) {
  for (auto key : {pk::kValueSchemaId, pk::kValueSchemaAvro, pk::kValueSchemaProtobuf}) {
    if (configs.count(std::string(key))) {
      return bad("Configuration " + std::string(key) +
                 " is set by the broker when it creates a confluent table");
    }
  }
  auto format = configs.find(std::string(pk::kValueFormat));
  if (format == configs.end() || format->second != "confluent") return Status::Ok();
  auto subject = configs.find(std::string(pk::kValueSchemaSubject));
  if (subject == configs.end() || subject->second.empty()) {
    return bad("Configuration table.value.format=confluent requires " +
               std::string(pk::kValueSchemaSubject));
  }
  if (!registry) {
    return bad(
        "table.value.format=confluent needs this broker's Schema Registry "
        "(schema.registry.listener)");
  }
  auto v = registry->latest(subject->second);
  if (!v.ok()) {
    return bad("Configuration " + std::string(pk::kValueSchemaSubject) + "=" + subject->second +
               ": " + v.status().message());
  }
  auto columns = table_columns(*registry, *v);
  if (!columns.ok()) return columns.status();
  configs[std::string(pk::kValueSchemaId)] = std::to_string(v->id);
  // The registry is read again (references): a failure here is reported, not assumed away.
  std::string_view key;
  std::string text;
  if (v->type == "AVRO") {
    auto s = avro_table_schema(*registry, *v);
    if (!s.ok()) return s.status();
    key = pk::kValueSchemaAvro;
    text = s->schema.normalized_json();  // compact, every attribute kept (the defaults)
  } else if (v->type == "PROTOBUF") {
    auto s = protobuf_table_schema(*registry, *v);
    if (!s.ok()) return s.status();
    key = pk::kValueSchemaProtobuf;
    text = s->schema.self_contained();
  } else {
    return Status::Ok();
  }
  // A config value travels in Kafka strings (CreateTopics, DescribeConfigs), at most 32767
  // bytes; a longer one could not be answered.
  if (text.size() > kMaxPinnedSchemaBytes) {
    return bad("the table schema (id " + std::to_string(v->id) + ") pinned self-contained is " +
               std::to_string(text.size()) + " bytes; " + std::string(key) + " holds at most " +
               std::to_string(kMaxPinnedSchemaBytes) + " (a Kafka string)");
  }
  configs[std::string(key)] = std::move(text);
  return Status::Ok();
}

Result<TableSchemaInfo> describe_table_schema(const SchemaSource* source,
                                              const pkindex::TableConfig& table) {
  if (!table.value_schema_avro.empty()) {
    auto s = pkindex::parse_avro_table_schema(table.value_schema_avro);
    if (!s.ok()) return s.status();
    return TableSchemaInfo{"AVRO", std::move(s->columns)};
  }
  if (!table.value_schema_protobuf.empty()) {
    auto s = pkindex::parse_protobuf_table_schema(table.value_schema_protobuf);
    if (!s.ok()) return s.status();
    return TableSchemaInfo{"PROTOBUF", std::move(s->columns)};
  }
  if (!source) return Status(Errc::unavailable, "the Schema Registry is not serving");
  auto e = source->entry(table.value_schema_id);
  if (!e.ok()) return e.status();
  auto columns = table_columns(*source, *e);
  if (!columns.ok()) return columns.status();
  return TableSchemaInfo{e->type, {columns->begin(), columns->end()}};
}

std::shared_ptr<const pkindex::ConfluentDecoder> make_table_decoder(
    std::shared_ptr<const RegistryHandle> registry, const pkindex::TableConfig& table) {
  if (table.value_format != pk::ValueFormat::confluent) return nullptr;
  return std::make_shared<TableDecoder>(std::move(registry), table.value_schema_id);
}

}  // namespace strata::broker::schema
