#include "pkindex/table_config.h"

#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "pkindex/column_stats.h"
#include "protocol/schema/protobuf_file.h"

namespace strata::pkindex {

namespace {

const std::string* get(const std::map<std::string, std::string>& c, std::string_view key) {
  auto it = c.find(std::string(key));
  return it == c.end() ? nullptr : &it->second;
}

Status bad(std::string_view key, const std::string& value, const std::string& why) {
  return Status(Errc::invalid_argument,
                "Invalid value " + value + " for configuration " + std::string(key) + ": " + why);
}

// Applies one per-column key (is_column_key(name)) to `t` (may be null: check only).
Status apply_column_key(std::string_view name, const std::string& v, TableConfig* t) {
  std::string column;
  is_column_key(name, &column);
  if (name.ends_with(protocol::pk::kAggSuffix)) {
    auto fn = parse_agg_fn(v);
    if (!fn) {
      return bad(name, v,
                 "String must be one of: sum, product, max, min, last_value, "
                 "last_value_ignore_nulls, first_value, first_value_ignore_nulls, listagg, "
                 "string_agg, bool_and, bool_or");
    }
    if (t) t->fields[column].fn = *fn;
  } else if (t) {
    t->fields[column].delimiter = v;
  }
  return Status::Ok();
}

// The table-schema keys of a typed topic agree with its value format.
Status check_value_schema_keys(const TableConfig& t) {
  auto require = [](std::string_view key, std::string_view what) {
    return Status(Errc::invalid_argument,
                  "Configuration " + std::string(key) + " requires " + std::string(what));
  };
  if (t.value_format == ValueFormat::confluent && t.value_schema_subject.empty()) {
    return Status(Errc::invalid_argument, "Configuration " + std::string(kValueFormat) +
                                              "=confluent requires " +
                                              std::string(kValueSchemaSubject));
  }
  // The broker pins the id at creation; a confluent table without one has no table schema to
  // frame its changelog with (a log topic's: to check its writers' fields against).
  if (t.value_format == ValueFormat::confluent && t.value_schema_id < 0) {
    return Status(Errc::invalid_argument, "Configuration " + std::string(kValueFormat) +
                                              "=confluent requires " + std::string(kValueSchemaId) +
                                              " (pinned by the broker at creation)");
  }
  if (t.value_format != ValueFormat::confluent) {
    if (!t.value_schema_subject.empty())
      return require(kValueSchemaSubject, "table.value.format=confluent");
    if (t.value_schema_id >= 0) return require(kValueSchemaId, "table.value.format=confluent");
    if (!t.value_schema_avro.empty())
      return require(kValueSchemaAvro, "table.value.format=confluent");
    if (!t.value_schema_protobuf.empty())
      return require(kValueSchemaProtobuf, "table.value.format=confluent");
  }
  if (!t.value_schema_avro.empty() && !t.value_schema_protobuf.empty()) {
    return require(kValueSchemaAvro, "no " + std::string(kValueSchemaProtobuf));
  }
  return Status::Ok();
}

}  // namespace

std::string_view agg_fn_name(AggFn f) {
  switch (f) {
    case AggFn::sum:
      return "sum";
    case AggFn::product:
      return "product";
    case AggFn::max:
      return "max";
    case AggFn::min:
      return "min";
    case AggFn::last_value:
      return "last_value";
    case AggFn::last_value_ignore_nulls:
      return "last_value_ignore_nulls";
    case AggFn::first_value:
      return "first_value";
    case AggFn::first_value_ignore_nulls:
      return "first_value_ignore_nulls";
    case AggFn::listagg:
      return "listagg";
    case AggFn::bool_and:
      return "bool_and";
    case AggFn::bool_or:
      return "bool_or";
  }
  return "?";
}

std::optional<AggFn> parse_agg_fn(std::string_view name) {
  if (name == "string_agg") return AggFn::listagg;
  for (int i = 0; i <= static_cast<int>(AggFn::bool_or); ++i) {
    if (agg_fn_name(static_cast<AggFn>(i)) == name) return static_cast<AggFn>(i);
  }
  return std::nullopt;
}

bool is_column_key(std::string_view name, std::string* column) {
  using namespace protocol::pk;
  if (!name.starts_with(kFieldsPrefix)) return false;
  std::string_view rest = name.substr(kFieldsPrefix.size());
  for (std::string_view suffix : {kAggSuffix, kListaggDelimiterSuffix, kStringaggDelimiterSuffix}) {
    // The longest suffix first would matter only for a column named "x.listagg": ".agg" cannot
    // end ".delimiter", so the order is free.
    if (rest.size() > suffix.size() && rest.ends_with(suffix)) {
      if (column) *column = std::string(rest.substr(0, rest.size() - suffix.size()));
      return true;
    }
  }
  return false;
}

const KeyTable<TableConfig>& table_key_table() {
  // Names are protocol/pk/table_keys.h's constants (string literals, so .data() is terminated).
  static const KeyTable<TableConfig> table = [] {
    using C = TableConfig;
    constexpr uint8_t kRo = kConfigReadOnly;
    constexpr auto style = ConfigMessages::kafka;
    KeyTable<C> t(style, /*dynamic_by_default=*/true);
    t.one_of(kTableType.data(), t.kNoField, "log",
             {"log", std::string(protocol::pk::kTableTypePrimaryKey)},
             "log: a plain topic; primary-key: a primary-key table (state per partition in "
             "RocksDB).",
             kRo);
    t.enumeration<MergeEngine>(
        kMergeEngine.data(), &C::merge_engine, "last_row",
        {{"last_row", MergeEngine::last_row},
         {"first_row", MergeEngine::first_row},
         {"versioned", MergeEngine::versioned},
         {"aggregation", MergeEngine::aggregation}},
        "last_row | first_row | versioned | aggregation (typed tables; per column "
        "table.fields.<column>.agg): how a write merges with the key's current row.",
        kRo);
    t.string(kVersionHeader.data(), &C::version_header, "",
             "versioned engine: record header holding the version (signed 64-bit big-endian).", kRo,
             [](const std::string& v) -> std::string {
               return v.rfind("strata.", 0) == 0 ? "header names under strata. are reserved" : "";
             });
    t.enumeration<ChangelogImage>(
        kChangelogImage.data(), &C::image, "full",
        {{"full", ChangelogImage::full}, {"wal", ChangelogImage::wal}},
        "full: changelog records carry before-images; wal: after-images only.", kRo);
    // Empty = the engine's default, resolved in parse_table_config.
    t.string(kDeleteBehavior.data(), t.kNoField, "",
             "allow | ignore | disable for null-value records; empty = allow for last_row, else "
             "ignore.",
             kRo, [](const std::string& v) -> std::string {
               if (v.empty() || v == "allow" || v == "ignore" || v == "disable") return "";
               return "String must be one of: allow, ignore, disable";
             });
    t.custom(
        kTtlMs.data(), ConfigType::long_, "-1",
        "Row time-to-live from its last write (broker append time); -1 = none.", kRo,
        [](const std::string& v, C* c) -> Status {
          const std::string name(kTtlMs);
          int64_t x = 0;
          auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
          if (ec != std::errc() || p != v.data() + v.size())
            return KeyTable<C>::invalid(ConfigMessages::kafka, name, v,
                                        "Not a number of type LONG");
          if (x < -1 || x == 0)
            return KeyTable<C>::invalid(ConfigMessages::kafka, name, v,
                                        "Value must be -1 (no TTL) or positive");
          if (c) c->ttl_ms = x;
          return Status::Ok();
        },
        "-1 or [1, 9223372036854775807]");
    t.integer(kSnapshotIntervalMs.data(), &C::snapshot_interval_ms,
              std::to_string(kDefaultSnapshotIntervalMs), int64_t{100}, INT64_MAX,
              "How often each partition's state is checkpointed (alterable; applies without "
              "restart).");
    t.enumeration<Partitioner>(
        kPartitioner.data(), &C::partitioner, "murmur2",
        {{"murmur2", Partitioner::murmur2}, {"crc32", Partitioner::crc32}},
        "murmur2 (Java, kafka-python, KafkaJS) | crc32 (librdkafka consistent_random).", kRo);
    t.enumeration<ValueFormat>(
        kValueFormat.data(), &C::value_format, "raw",
        {{"raw", ValueFormat::raw},
         {"json", ValueFormat::json},
         {"confluent", ValueFormat::confluent}},
        "raw: the row is the record value's bytes; json: a JSON object of columns (partial "
        "updates, aggregation); confluent: values in Confluent's schema-registry framing, rows "
        "as json's (needs table.value.schema.subject).",
        kRo);
    t.string(kValueSchemaSubject.data(), &C::value_schema_subject, "",
             "confluent tables: the registry subject whose latest schema (at creation) is the "
             "table schema; its fields are the columns.",
             kRo);
    t.integer(kValueSchemaId.data(), &C::value_schema_id, "-1", int32_t{-1}, INT32_MAX,
              "confluent tables: the table schema's id, set by the broker at creation (the log's "
              "framing).",
              kRo);
    t.string(kValueSchemaAvro.data(), &C::value_schema_avro, "",
             "confluent tables with an Avro table schema: that schema, set by the broker at "
             "creation (the changelog's rows are in its binary encoding).",
             kRo, [](const std::string& v) -> std::string {
               return v.empty() ? "" : parse_avro_table_schema(v).status().message();
             });
    t.string(kValueSchemaProtobuf.data(), &C::value_schema_protobuf, "",
             "confluent tables with a Protobuf table schema: that schema's .proto text (with its "
             "imports' as JSON when it has references), set by the broker at creation (the "
             "changelog's rows are its first message).",
             kRo, [](const std::string& v) -> std::string {
               return v.empty() ? "" : parse_protobuf_table_schema(v).status().message();
             });
    t.boolean(kHistoryEnabled.data(), &C::history, "false",
              "Keep every change of every key in a history index, for point-in-time reads "
              "(LookupAsOf); each change is then written twice to the state.",
              kRo);
    t.string(kStatisticsColumns.data(), &C::statistics_columns, "",
             "Typed tables: columns whose per-batch min / max / null count the changelog keeps "
             "(* = all, or a comma-separated list) so filtered reads skip batches; empty = none.",
             kRo, [](const std::string& v) -> std::string {
               return stats::parse_columns(v).status().message();
             });
    return t;
  }();
  return table;
}

TableConfig::TableConfig() {
  static const TableConfig defaults = [] {
    auto t = parse_table_config(
        {{std::string(kTableType), std::string(protocol::pk::kTableTypePrimaryKey)}});
    if (!t.ok()) std::abort();  // a default fails its own key's check: a table bug
    return *t;
  }();
  *this = defaults;
}

Result<AvroTableSchema> parse_avro_table_schema(std::string_view text) {
  auto invalid = [](const std::string& why) {
    return Status(Errc::invalid_argument, "the Avro table schema " + why);
  };
  auto schema = protocol::schema::AvroSchema::parse(text);
  if (!schema.ok()) return invalid("does not parse: " + schema.status().message());
  if (schema->type_name() != "record") {
    return invalid("is " + std::string(schema->type_name()) +
                   ": it must be a record whose fields are the columns");
  }
  // What is left is the columns' nullability, read from the text since AvroSchema keeps its
  // fields to the codec. The parser accepted the text, but this reads it without assuming so
  // (the text may come from a client's config): nothing here throws.
  const auto j = nlohmann::json::parse(text, nullptr, false);
  const auto fields = j.is_object() ? j.find("fields") : j.end();
  if (!j.is_object() || fields == j.end() || !fields->is_array()) {
    return invalid("must be a record object with a \"fields\" array");
  }
  AvroTableSchema out{std::move(*schema), {}};
  for (const auto& f : *fields) {
    const auto name = f.is_object() ? f.find("name") : f.end();
    if (!f.is_object() || name == f.end() || !name->is_string()) {
      return invalid("has a field without a name");
    }
    const auto type = f.find("type");
    const auto d = f.find("default");
    if (type == f.end() || !type->is_array() || type->empty() || (*type)[0] != "null" ||
        d == f.end() || !d->is_null()) {
      return invalid("field " + name->get<std::string>() +
                     " must be a union with \"null\" first and \"default\": null (a partial "
                     "write leaves the other columns null)");
    }
    out.columns.push_back(name->get<std::string>());
  }
  if (out.columns.empty()) return invalid("has no fields (columns)");
  return out;
}

Result<ProtobufTableSchema> parse_protobuf_table_schema(std::string_view text) {
  auto invalid = [](const std::string& why) {
    return Status(Errc::invalid_argument, "the Protobuf table schema " + why);
  };
  auto schema = protocol::schema::ProtobufSchema::parse_self_contained(text);
  if (!schema.ok()) return invalid("does not parse: " + schema.status().message());
  const google::protobuf::FileDescriptor& file = *schema->file().file;
  if (file.message_type_count() == 0) return invalid("declares no message (the row)");
  const google::protobuf::Descriptor& row = *file.message_type(0);
  ProtobufTableSchema out{std::move(*schema), {}};
  for (int i = 0; i < row.field_count(); ++i) {
    const google::protobuf::FieldDescriptor& f = *row.field(i);
    if (f.is_repeated() || f.is_required() || !f.has_presence()) {
      return invalid("field " + f.name() + " of " + row.full_name() +
                     " must have presence (proto3 optional, a message or wrapper; not repeated, "
                     "map or required): a partial write leaves the other columns null");
    }
    // Setting one member of a oneof clears the others: two columns of one row could not both
    // hold values, and a merged row would silently lose one.
    if (f.real_containing_oneof()) {
      return invalid("field " + f.name() + " of " + row.full_name() + " is a member of oneof " +
                     f.real_containing_oneof()->name() + ": columns must be independent");
    }
    out.columns.push_back(f.name());
  }
  if (out.columns.empty()) return invalid("has no fields (columns) in " + row.full_name());
  return out;
}

std::string check_table_key(std::string_view name, const std::string& v) {
  if (is_column_key(name)) return apply_column_key(name, v, nullptr).message();
  const auto* key = table_key_table().find(name);
  if (!key) return bad(name, v, "Unknown table configuration").message();
  Status st = key->check(v);
  return st.ok() ? "" : st.message();
}

bool is_pk_table(const std::map<std::string, std::string>& configs) {
  const std::string* t = get(configs, kTableType);
  return t && *t == protocol::pk::kTableTypePrimaryKey;
}

Result<TableConfig> parse_table_config(const std::map<std::string, std::string>& configs) {
  const auto& table = table_key_table();
  for (const auto& [k, v] : configs) {
    if (k.rfind("table.", 0) != 0) continue;
    if (is_column_key(k)) {
      STRATA_RETURN_IF_ERROR(apply_column_key(k, v, nullptr));
      continue;
    }
    const auto* key = table.find(k);
    if (!key) return bad(k, v, "Unknown table configuration");
    STRATA_RETURN_IF_ERROR(key->check(v));
  }
  TableConfig t{TableConfig::Unset{}};
  table.apply_defaults(t);
  if (!is_pk_table(configs)) {
    // A log topic may be typed (json values, or confluent: values in Confluent's framing whose
    // fields are the columns of a registered table schema) and keep column statistics; the rest
    // is PK state.
    for (const auto& [k, v] : configs) {
      if (k.rfind("table.", 0) != 0 || k == kTableType) continue;
      if (k != kValueFormat && k != kStatisticsColumns && k != kValueSchemaSubject &&
          k != kValueSchemaId && k != kValueSchemaAvro && k != kValueSchemaProtobuf) {
        return Status(Errc::invalid_argument,
                      "Configuration " + k + " requires table.type=primary-key");
      }
      table.find(k)->apply(v, &t);
    }
    STRATA_RETURN_IF_ERROR(check_value_schema_keys(t));
    if (!t.statistics_columns.empty() && !t.typed()) {
      return Status(Errc::invalid_argument, "Configuration " + std::string(kStatisticsColumns) +
                                                " requires table.value.format=json or confluent");
    }
    return t;
  }
  for (const auto& [k, v] : configs) {
    if (const auto* key = table.find(k)) key->apply(v, &t);
    if (is_column_key(k)) (void)apply_column_key(k, v, &t);
  }
  auto require = [](std::string_view key, std::string_view what) {
    return Status(Errc::invalid_argument,
                  "Configuration " + std::string(key) + " requires " + std::string(what));
  };
  if (t.merge_engine == MergeEngine::aggregation && !t.typed()) {
    return require(kMergeEngine, "a typed table (table.value.format=json or confluent)");
  }
  STRATA_RETURN_IF_ERROR(check_value_schema_keys(t));
  if (!t.statistics_columns.empty() && !t.typed()) {
    return require(kStatisticsColumns, "a typed table (table.value.format=json or confluent)");
  }
  if (!t.value_schema_avro.empty()) {
    auto avro = parse_avro_table_schema(t.value_schema_avro);
    if (!avro.ok()) return avro.status();
    t.value_avro = std::make_shared<const protocol::schema::AvroSchema>(std::move(avro->schema));
  }
  if (!t.value_schema_protobuf.empty()) {
    auto proto = parse_protobuf_table_schema(t.value_schema_protobuf);
    if (!proto.ok()) return proto.status();
    t.value_protobuf =
        std::make_shared<const protocol::schema::ProtobufSchema>(std::move(proto->schema));
  }
  for (const auto& [k, v] : configs) {
    if (!is_column_key(k)) continue;
    if (t.merge_engine != MergeEngine::aggregation) {
      return require(k, "table.merge-engine=aggregation");
    }
    std::string column;
    is_column_key(k, &column);
    if (!k.ends_with(protocol::pk::kAggSuffix) && t.fields[column].fn != AggFn::listagg) {
      return require(k, "table.fields." + column + ".agg=listagg");
    }
  }
  if (t.merge_engine == MergeEngine::versioned && t.version_header.empty()) {
    return Status(Errc::invalid_argument, std::string("Configuration ") +
                                              std::string(kVersionHeader) +
                                              " is required by table.merge-engine=versioned");
  }
  if (t.merge_engine != MergeEngine::versioned && !t.version_header.empty()) {
    return Status(Errc::invalid_argument, std::string("Configuration ") +
                                              std::string(kVersionHeader) +
                                              " requires table.merge-engine=versioned");
  }
  t.delete_behavior =
      t.merge_engine == MergeEngine::last_row ? DeleteBehavior::allow : DeleteBehavior::ignore;
  if (const auto* v = get(configs, kDeleteBehavior); v && !v->empty()) {
    t.delete_behavior = *v == "allow"    ? DeleteBehavior::allow
                        : *v == "ignore" ? DeleteBehavior::ignore
                                         : DeleteBehavior::disable;
  }
  return t;
}

}  // namespace strata::pkindex
