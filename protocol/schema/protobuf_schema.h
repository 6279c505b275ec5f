// Protobuf schemas for the embedded Schema Registry (schema type "PROTOBUF"): a schema is one
// .proto file, registered either as .proto text (KafkaJS's client, Confluent's Java client) or
// as a base64 serialized FileDescriptorProto (confluent-kafka-python); both are parsed with
// libprotoc/libprotobuf (the same parser protoc uses) into a descriptor pool holding the file
// and its imports: Confluent schema references named by import path, or the well-known
// google/protobuf/*.proto files linked into libprotobuf. The normalized text is the file printed
// back as .proto (what the registry stores and serves, and compares lookups by: text and
// descriptor registrations of one file are one schema). Compatibility follows Confluent's
// Protobuf provider: a diff of writer and reader files whose every change is classified
// (Confluent's names, e.g. FIELD_SCALAR_KIND_CHANGED); docs/schema-registry.md lists the rules.
//
// Values (Confluent's framing after the schema id: message indexes, then the message) decode to
// JSON objects of the message's fields: protobuf_codec.h.
//
// A ProtobufSchema is immutable and cheap to copy (its pool is shared); any thread may use one.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/base/result.h"

namespace strata::protocol::schema {

namespace detail {
struct ProtoFile;
}

class ProtobufSchema {
 public:
  // A referenced schema under the name the file imports it by (a Confluent reference's name).
  using Reference = std::pair<std::string, const ProtobufSchema*>;

  // Parses .proto text or a base64 FileDescriptorProto. Errors are Errc::invalid_argument with
  // the parser's message (line and column for text). Every import must be one of `references`
  // or a well-known google/protobuf file; definitions nest at most 32 levels.
  static Result<ProtobufSchema> parse(std::string_view text,
                                      const std::vector<Reference>& references = {});

  // The file as .proto text (libprotobuf's printer: fully qualified type names, one canonical
  // layout whatever the input's form or formatting).
  std::string normalized() const;

  // The schema readable without its references: normalized() when it imports only well-known
  // files, else a JSON object {"imports": [{"name", "schema"}...], "schema"} carrying the text of
  // every file it imports (transitively, imports first, by their import names).
  std::string self_contained() const;
  // Reads normalized() / self_contained() text (or any parse() input) back, without references.
  static Result<ProtobufSchema> parse_self_contained(std::string_view text);

  const detail::ProtoFile& file() const { return *file_; }

 private:
  explicit ProtobufSchema(std::shared_ptr<const detail::ProtoFile> file) : file_(std::move(file)) {}

  std::shared_ptr<const detail::ProtoFile> file_;
};

// Can a reader using `reader` read every message written with `writer`? Confluent's rules; empty
// when every change is compatible, else one reason per incompatible change,
// "<CHANGE> at #/<Message>/<field number>".
std::vector<std::string> protobuf_schema_incompatibilities(const ProtobufSchema& reader,
                                                           const ProtobufSchema& writer);

}  // namespace strata::protocol::schema
