// Protobuf values to JSON; see protobuf_codec.h.
#include "protocol/schema/protobuf_codec.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/utf8.h"
#include "protocol/schema/protobuf_file.h"

namespace strata::protocol::schema {

namespace {

namespace pb = google::protobuf;
using json = nlohmann::json;
using Field = pb::FieldDescriptor;

constexpr int kMaxDepth = 64;
constexpr uint64_t kMaxIndexes = 32;  // definitions nest at most 32 levels (protobuf_schema.cc)

Status bad(std::string message) { return Status(Errc::invalid_argument, std::move(message)); }

struct Reading {
  std::vector<int> indexes;
  size_t body = 0;  // where the message starts
};

std::optional<uint64_t> varint(std::span<const uint8_t> data, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && pos < data.size(); shift += 7) {
    const uint8_t b = data[pos++];
    v |= uint64_t{b & 0x7Fu} << shift;
    if (!(b & 0x80)) return v;
  }
  return std::nullopt;
}

int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

std::optional<Reading> read_indexes(std::span<const uint8_t> data, bool zigzag) {
  size_t pos = 0;
  auto count = varint(data, pos);
  if (!count) return std::nullopt;
  const int64_t n = zigzag ? unzigzag(*count) : static_cast<int64_t>(*count);
  if (n == 0) return Reading{{0}, pos};  // [0], the common case, in one byte
  if (n < 0 || static_cast<uint64_t>(n) > kMaxIndexes) return std::nullopt;
  Reading r;
  for (int64_t i = 0; i < n; ++i) {
    auto v = varint(data, pos);
    if (!v) return std::nullopt;
    const int64_t idx = zigzag ? unzigzag(*v) : static_cast<int64_t>(*v);
    if (idx < 0 || idx > std::numeric_limits<int>::max()) return std::nullopt;
    r.indexes.push_back(static_cast<int>(idx));
  }
  r.body = pos;
  return r;
}

// Confluent numbers nested messages as Wire lists them: map entries are not messages there.
const pb::Descriptor* nested(const pb::Descriptor& parent, int index) {
  for (int i = 0; i < parent.nested_type_count(); ++i) {
    if (parent.nested_type(i)->options().map_entry()) continue;
    if (index-- == 0) return parent.nested_type(i);
  }
  return nullptr;
}

const pb::Descriptor* message_at(const pb::FileDescriptor& file, const std::vector<int>& path) {
  if (path.empty() || path[0] >= file.message_type_count()) return nullptr;
  const pb::Descriptor* d = file.message_type(path[0]);
  for (size_t i = 1; d && i < path.size(); ++i) d = nested(*d, path[i]);
  return d;
}

// A well-known wrapper, by name and by shape: a schema may define its own message under a
// wrapper's name (in package google.protobuf, or as a reference named like wrappers.proto), and
// unwrapping one that is not a single `value` field would read a field that is not there.
bool is_wrapper(const pb::Descriptor& d) {
  if (d.field_count() != 1 || d.field(0)->name() != "value" || d.field(0)->is_repeated() ||
      d.field(0)->cpp_type() == Field::CPPTYPE_MESSAGE) {
    return false;
  }
  static const char* const kWrappers[] = {
      "google.protobuf.DoubleValue", "google.protobuf.FloatValue",  "google.protobuf.Int64Value",
      "google.protobuf.UInt64Value", "google.protobuf.Int32Value",  "google.protobuf.UInt32Value",
      "google.protobuf.BoolValue",   "google.protobuf.StringValue", "google.protobuf.BytesValue"};
  for (const char* w : kWrappers) {
    if (d.full_name() == w) return true;
  }
  return false;
}

class ToJson {
 public:
  Result<json> message(const pb::Message& m, int depth) {
    if (depth > kMaxDepth) return bad("messages nest deeper than " + std::to_string(kMaxDepth));
    const pb::Descriptor& d = *m.GetDescriptor();
    const pb::Reflection& r = *m.GetReflection();
    if (!r.GetUnknownFields(m).empty()) {
      return bad(d.full_name() + " holds a field number its schema does not declare");
    }
    // A wrapper field is its value; a row (depth 0) stays an object whatever its type's name.
    if (depth > 0 && is_wrapper(d)) return value(m, *d.field(0), -1, depth);
    json out = json::object();
    for (int i = 0; i < d.field_count(); ++i) {
      const Field& f = *d.field(i);
      if (f.is_map()) {
        json map = json::object();
        for (int k = 0; k < r.FieldSize(m, &f); ++k) {
          const pb::Message& entry = r.GetRepeatedMessage(m, &f, k);
          const Field& kf = *f.message_type()->map_key();
          auto key = value(entry, kf, -1, depth + 1);
          if (!key.ok()) return key.status();
          auto v = value(entry, *f.message_type()->map_value(), -1, depth + 1);
          if (!v.ok()) return v.status();
          map[key->is_string() ? key->get<std::string>() : key->dump()] = std::move(*v);
        }
        out[f.name()] = std::move(map);
      } else if (f.is_repeated()) {
        json items = json::array();
        for (int k = 0; k < r.FieldSize(m, &f); ++k) {
          auto v = value(m, f, k, depth);
          if (!v.ok()) return v.status();
          items.push_back(std::move(*v));
        }
        out[f.name()] = std::move(items);
      } else if (!f.has_presence() || r.HasField(m, &f)) {
        auto v = value(m, f, -1, depth);
        if (!v.ok()) return v.status();
        out[f.name()] = std::move(*v);
      }
    }
    return out;
  }

 private:
  // Field `f` of `m`: item `k` of a repeated field, or the singular value when k < 0.
  Result<json> value(const pb::Message& m, const Field& f, int k, int depth) {
    const pb::Reflection& r = *m.GetReflection();
    const bool one = k < 0;
    switch (f.cpp_type()) {
      case Field::CPPTYPE_INT32:
        return json(one ? r.GetInt32(m, &f) : r.GetRepeatedInt32(m, &f, k));
      case Field::CPPTYPE_INT64:
        return json(one ? r.GetInt64(m, &f) : r.GetRepeatedInt64(m, &f, k));
      case Field::CPPTYPE_UINT32:
        return json(one ? r.GetUInt32(m, &f) : r.GetRepeatedUInt32(m, &f, k));
      case Field::CPPTYPE_UINT64:
        return json(one ? r.GetUInt64(m, &f) : r.GetRepeatedUInt64(m, &f, k));
      case Field::CPPTYPE_BOOL:
        return json(one ? r.GetBool(m, &f) : r.GetRepeatedBool(m, &f, k));
      case Field::CPPTYPE_FLOAT:
      case Field::CPPTYPE_DOUBLE: {
        const double v = f.cpp_type() == Field::CPPTYPE_FLOAT
                             ? (one ? r.GetFloat(m, &f) : r.GetRepeatedFloat(m, &f, k))
                             : (one ? r.GetDouble(m, &f) : r.GetRepeatedDouble(m, &f, k));
        if (!std::isfinite(v)) return bad("field " + f.full_name() + " is not a finite number");
        return json(v);
      }
      case Field::CPPTYPE_ENUM: {
        const int n = one ? r.GetEnumValue(m, &f) : r.GetRepeatedEnumValue(m, &f, k);
        const pb::EnumValueDescriptor* e = f.enum_type()->FindValueByNumber(n);
        return e ? json(e->name()) : json(n);
      }
      case Field::CPPTYPE_STRING: {
        std::string scratch;
        const std::string& s = one ? r.GetStringReference(m, &f, &scratch)
                                   : r.GetRepeatedStringReference(m, &f, k, &scratch);
        if (f.type() == Field::TYPE_BYTES) {
          std::string out;
          out.reserve(s.size());
          for (char c : s) append_latin1(out, static_cast<uint8_t>(c));
          return json(std::move(out));
        }
        if (!valid_utf8(s)) return bad("field " + f.full_name() + " is not UTF-8");
        return json(s);
      }
      case Field::CPPTYPE_MESSAGE:
        return message(one ? r.GetMessage(m, &f) : r.GetRepeatedMessage(m, &f, k), depth + 1);
    }
    return bad("field " + f.full_name() + " has an unknown type");
  }
};

Result<json> decode_as(const detail::ProtoFile& file, const pb::Descriptor& d,
                       std::span<const uint8_t> body) {
  const pb::Message* prototype = file.factory.GetPrototype(&d);
  std::unique_ptr<pb::Message> m(prototype->New());
  if (!m->ParsePartialFromArray(body.data(), static_cast<int>(body.size()))) {
    return bad("the bytes do not parse as " + d.full_name());
  }
  if (!m->IsInitialized()) {
    return bad(d.full_name() + " misses required fields: " + m->InitializationErrorString());
  }
  return ToJson().message(*m, 0);
}

}  // namespace

Result<json> protobuf_decode(const ProtobufSchema& schema, std::span<const uint8_t> data) {
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return bad("the value is too large");
  }
  const detail::ProtoFile& file = schema.file();
  std::vector<Reading> readings;
  for (bool zigzag : {true, false}) {
    if (auto r = read_indexes(data, zigzag)) {
      bool same = false;
      for (const auto& seen : readings) same |= seen.indexes == r->indexes && seen.body == r->body;
      if (!same) readings.push_back(std::move(*r));
    }
  }
  readings.push_back(Reading{{0}, 0});  // no indexes: the file's first message
  std::optional<json> found;
  std::string why;
  for (const auto& r : readings) {
    const pb::Descriptor* d = message_at(*file.file, r.indexes);
    if (!d) continue;
    auto v = decode_as(file, *d, data.subspan(r.body));
    if (!v.ok()) {
      if (why.empty()) why = v.status().message();
      continue;
    }
    if (found && *found != *v) {
      return bad("the message indexes read two ways that both parse, to different rows");
    }
    found = std::move(*v);
  }
  if (found) return std::move(*found);
  return bad(why.empty() ? std::string("the message indexes name no message of the schema") : why);
}

}  // namespace strata::protocol::schema
