// Protobuf values in Confluent's framing, after the magic byte and schema id: the message
// indexes (which message of the file: a path of indexes into top-level then nested messages),
// then the serialized message. Clients write the indexes three ways — zigzag varints (Confluent's
// Java client, librdkafka's serdes, confluent-kafka-python from 1.8.2), plain varints (earlier
// confluent-kafka-python), or not at all (KafkaJS's registry client, which means the file's first
// message) — and `[0]` as a single 0x00 in the first two. The decoder tries each reading and
// takes the one that parses; two that parse to different rows are refused as ambiguous.
//
// JSON mapping (the value a column holds; close to proto3's JSON mapping, with field names as
// declared, not camelCase, and bytes as Avro's codec writes them so a column reads the same
// whichever writer's format set it): integers → integers (64-bit ones too: columns aggregate
// numbers), float and double → numbers (NaN and infinities have no JSON form: an error), bool,
// string (UTF-8 checked), bytes → a string of code points 0-255, enum → its value's name (a
// number the schema does not name: the number), message → object, repeated → array, map →
// object (keys as strings), the google.protobuf wrapper messages (Int64Value, StringValue, ...)
// → the wrapped value. Which fields an object holds follows protobuf's field presence: a field
// with presence (proto2, proto3 `optional`, message fields, oneof members) appears when it was
// written; one without (proto3 implicit scalars, repeated, map) always appears, with its
// default when absent from the bytes, since the bytes cannot tell "unset" from "default".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>

#include "protocol/base/result.h"
#include "protocol/schema/protobuf_schema.h"

namespace strata::protocol::schema {

// Decodes the bytes after a Confluent-framed value's schema id. Errors are
// Errc::invalid_argument naming why (no reading parses; ambiguous; unknown fields — a field
// number the schema lacks; a missing proto2 required field; a NaN). Nesting is bounded (64).
Result<nlohmann::json> protobuf_decode(const ProtobufSchema& schema, std::span<const uint8_t> data);

// Encodes `row` as the file's first message — what a Protobuf table schema's rows are — in the
// form protobuf_decode reads: the message index [0] as one zero byte, then the message. The
// mapping above inverted: a null or absent field stays unset (a wrapper or a field with presence
// then reads as absent, an implicit one as its default); integers must fit their field, enums
// are names (or numbers), bytes strings of code points 0-255, maps objects whose keys parse as
// the key type. A name the message lacks or a value of the wrong kind fails, naming the field
// (Errc::invalid_argument). Nesting is bounded (64).
Result<std::string> protobuf_encode_row(const ProtobufSchema& schema, const nlohmann::json& row);

}  // namespace strata::protocol::schema
