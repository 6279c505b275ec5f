// Rows of confluent tables as the changelog carries them; see confluent_values.h.
#include "pkindex/confluent_values.h"

#include "pkindex/typed_row.h"
#include "protocol/schema/avro_codec.h"
#include "protocol/schema/protobuf_codec.h"

namespace strata::pkindex {

namespace {

std::span<const uint8_t> as_span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

Result<std::span<const uint8_t>> logged_image(std::span<const uint8_t> row,
                                              const TableConfig& table, std::string& buf) {
  buf.clear();
  append_confluent_header(buf, table.value_schema_id);
  if (!table.schema_typed_rows()) {
    buf.append(reinterpret_cast<const char*>(row.data()), row.size());
    return as_span(buf);
  }
  auto value = typed::parse_row(row);
  if (!value.ok()) return value.status();
  // Columns the row lacks take their default, null (parse_avro_table_schema), or stay unset
  // (parse_protobuf_table_schema: every column has presence).
  auto body = table.value_avro
                  ? protocol::schema::avro_encode(*table.value_avro, *value)
                  : protocol::schema::protobuf_encode_row(*table.value_protobuf, *value);
  if (!body.ok()) {
    return Status(Errc::invalid_argument, "the row does not fit the table schema (id " +
                                              std::to_string(table.value_schema_id) +
                                              "): " + body.status().message());
  }
  buf += *body;
  return as_span(buf);
}

Result<std::span<const uint8_t>> logged_row(std::span<const uint8_t> image,
                                            const TableConfig& table, std::string& buf) {
  auto body = confluent_body(image, table.value_schema_id);
  if (!body.ok() || !table.schema_typed_rows()) return body;
  auto value = table.value_avro ? protocol::schema::avro_decode(*table.value_avro, *body)
                                : protocol::schema::protobuf_decode(*table.value_protobuf, *body);
  if (!value.ok()) {
    return Status(Errc::invalid_argument, "a row in the table schema's encoding does not decode: " +
                                              value.status().message());
  }
  buf = typed::canonical(*value);
  return as_span(buf);
}

}  // namespace strata::pkindex
