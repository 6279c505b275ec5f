// Avro's binary encoding (the spec's "Binary Encoding"), between bytes and JSON values: what
// typed tables need to read values Confluent's Avro serializers wrote (the bytes after the
// 5-byte framing) as columns, and to write rows in a table's Avro schema.
//
// Written here rather than with Avro C (Debian's libavro): rows are JSON trees (nlohmann-json)
// everywhere else in Strata, Avro C's generic values would need a second conversion per value,
// and its decoder has no bound on the memory a hostile block count makes it allocate.
//
// JSON mapping (the value a column holds; not Avro's JSON encoding, which wraps union values in
// {"type": value}): null, boolean, int and long → integers, float and double → numbers (a NaN or
// an infinity has no JSON form: an error), string → string, bytes and fixed → a string of code
// points 0-255 (one per byte, as Avro's JSON encoding writes them), enum → its symbol, array →
// array, map → object, record → object of its fields, union → the branch's value. Logical types
// keep their underlying representation (a timestamp-millis is its long, a decimal its bytes).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "protocol/base/result.h"
#include "protocol/schema/avro_schema.h"

namespace strata::protocol::schema {

// Decodes one datum written with `schema`; every byte must be consumed. Errors are
// Errc::invalid_argument naming what failed and where ("field amount: truncated long"). Work
// and memory are bounded by the input's size (a block count cannot conjure items from nothing)
// and nesting by 64 levels.
Result<nlohmann::json> avro_decode(const AvroSchema& schema, std::span<const uint8_t> data);

// Encodes `value` as a datum of `schema` (the mapping above, inverted): a record field absent
// from the object takes its default, or fails without one; a union takes the first branch the
// value fits. Errors are Errc::invalid_argument naming the field and why.
Result<std::string> avro_encode(const AvroSchema& schema, const nlohmann::json& value);

}  // namespace strata::protocol::schema
