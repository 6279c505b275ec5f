// Values of `confluent` tables (table.value.format=confluent): what a writer sends is Confluent's
// schema-registry framing — magic byte 0, a 4-byte big-endian schema id, the body in that
// schema's encoding. The state keeps rows as json tables do (canonical JSON of the columns), so
// merges, projection and lookups are the json table's; the log carries each after- and
// before-image in the *table schema's* framing, so a plain consumer's deserializer reads the
// changelog: the row's JSON for a JSON Schema table schema, its Avro binary encoding for an Avro
// one. Replay reads rows back with the table config alone (an Avro table keeps its schema's text
// in table.value.schema.avro): no registry is needed to recover.
//
// Decoding a writer's value needs the registry (the schema of its id), which lives in broker/:
// the broker gives each confluent table's state a ConfluentDecoder.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "pkindex/table_config.h"
#include "protocol/base/result.h"

namespace strata::pkindex {

inline constexpr size_t kConfluentHeaderSize = 5;

class ConfluentDecoder {
 public:
  virtual ~ConfluentDecoder() = default;
  // The columns a framed value writes, as a JSON object (the merge takes it as parsed), or why
  // not (Errc::invalid_argument: unknown id, undecodable body, a field the table lacks, ...;
  // Errc::unavailable: the registry could not be read — not serving yet, its writer
  // unreachable — which a retry may cure).
  // Called on the produce path of any partition: thread-safe.
  virtual Result<nlohmann::json> decode(std::span<const uint8_t> framed) const = 0;
  // decode() with only the schemas this broker already holds: one it would have to fetch from
  // another broker is Errc::unavailable. For work under a partition's locks (column statistics
  // at append), which must not wait on the network.
  virtual Result<nlohmann::json> decode_at_hand(std::span<const uint8_t> framed) const {
    return decode(framed);
  }
  // Whether a write's target columns (its strata.columns header) are all columns of the table
  // schema; else why not (Errc::invalid_argument). Thread-safe.
  virtual Status check_columns(const std::vector<std::string>& names) const = 0;
  // Whether the row after a write (merged, before it is made text) fits a JSON Schema table
  // schema, whose changelog carries rows as JSON: a consumer's deserializer validates them
  // against it. An Avro or Protobuf table's rows are checked by their encoding (logged_image).
  // A partial delete is not checked: it only nulls columns, which the schema lets be null.
  // Errc::invalid_argument naming the failure. Thread-safe.
  virtual Status check_row(const nlohmann::json& row) const = 0;
};

// Appends the 5-byte header of `schema_id`.
inline void append_confluent_header(std::string& out, int32_t schema_id) {
  const auto id = static_cast<uint32_t>(schema_id);
  out += '\0';
  out += static_cast<char>(id >> 24);
  out += static_cast<char>(id >> 16);
  out += static_cast<char>(id >> 8);
  out += static_cast<char>(id);
}

// The body of a value logged in `schema_id`'s framing; an error if it is not one.
inline Result<std::span<const uint8_t>> confluent_body(std::span<const uint8_t> v,
                                                       int32_t schema_id) {
  if (v.size() < kConfluentHeaderSize || v[0] != 0) {
    return Status(Errc::invalid_argument, "value is not in Confluent's framing");
  }
  const int32_t id = static_cast<int32_t>((uint32_t{v[1]} << 24) | (uint32_t{v[2]} << 16) |
                                          (uint32_t{v[3]} << 8) | uint32_t{v[4]});
  if (id != schema_id) {
    return Status(Errc::invalid_argument, "value framed with schema id " + std::to_string(id) +
                                              ", the table schema is " + std::to_string(schema_id));
  }
  return v.subspan(kConfluentHeaderSize);
}

// A confluent table's row (canonical JSON) as it is logged, built in `buf`: the table schema's
// header, then the JSON or the row's Avro encoding. Errc::invalid_argument when the row does not
// fit an Avro table schema (a column's value of another type, an int sum beyond 32 bits).
Result<std::span<const uint8_t>> logged_image(std::span<const uint8_t> row,
                                              const TableConfig& table, std::string& buf);

// The row (canonical JSON) a logged image of a confluent table carries: the bytes after the
// header (JSON Schema), or decoded into `buf` (Avro: every column, null ones included). An
// error when the image is not in the table schema's framing or does not decode.
Result<std::span<const uint8_t>> logged_row(std::span<const uint8_t> image,
                                            const TableConfig& table, std::string& buf);

}  // namespace strata::pkindex
