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

// JSON to a message, the mapping of ToJson inverted.
class FromJson {
 public:
  Status message(const json& v, pb::Message& m, int depth) {
    if (depth > kMaxDepth) return bad("values nest deeper than " + std::to_string(kMaxDepth));
    const pb::Descriptor& d = *m.GetDescriptor();
    if (depth > 0 && is_wrapper(d)) return set(v, m, *d.field(0), depth);
    if (!v.is_object()) return bad(d.full_name() + " needs an object, not " + kind(v));
    const pb::Reflection& r = *m.GetReflection();
    for (const auto& [name, item] : v.items()) {
      const Field* f = d.FindFieldByName(name);
      if (!f) return bad(d.full_name() + " has no field " + name);
      if (item.is_null()) continue;
      if (f->is_map()) {
        if (!item.is_object()) return bad("field " + f->full_name() + " needs an object (a map)");
        const Field& kf = *f->message_type()->map_key();
        const Field& vf = *f->message_type()->map_value();
        for (const auto& [key, value] : item.items()) {
          pb::Message* entry = r.AddMessage(&m, f);
          STRATA_RETURN_IF_ERROR(set(map_key(kf, key), *entry, kf, depth + 1));
          STRATA_RETURN_IF_ERROR(set(value, *entry, vf, depth + 1));
        }
      } else if (f->is_repeated()) {
        if (!item.is_array()) return bad("field " + f->full_name() + " needs an array");
        for (const auto& x : item) STRATA_RETURN_IF_ERROR(add(x, m, *f, depth));
      } else {
        STRATA_RETURN_IF_ERROR(set(item, m, *f, depth));
      }
    }
    return Status::Ok();
  }

 private:
  static std::string kind(const json& v) { return v.type_name(); }
  // A value in an error's text (what is not UTF-8 replaced: dump would throw on it).
  static std::string shown(const json& v) {
    return v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 60);
  }

  // A map key from its JSON object key: integers and bools parse, strings stay.
  static json map_key(const Field& kf, const std::string& key) {
    switch (kf.cpp_type()) {
      case Field::CPPTYPE_BOOL:
        return key == "true" ? json(true) : key == "false" ? json(false) : json(key);
      case Field::CPPTYPE_STRING:
        return json(key);
      default: {
        // Only the key's canonical text: "5" and " 5" (or "0" and "-0") would be one key twice.
        json n = json::parse(key, nullptr, false);
        return n.is_number_integer() && n.dump() == key ? n : json(key);
      }
    }
  }

  template <typename T>
  Status integer(const json& v, const Field& f, T& out) {
    if (v.is_number_unsigned()) {
      const auto u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<T>::max())) {
        out = static_cast<T>(u);
        return Status::Ok();
      }
    } else if (v.is_number_integer()) {
      const auto i = v.get<int64_t>();
      if (std::numeric_limits<T>::is_signed
              ? (i >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                 i <= static_cast<int64_t>(std::numeric_limits<T>::max()))
              : (i >= 0 && static_cast<uint64_t>(i) <=
                               static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
        out = static_cast<T>(i);
        return Status::Ok();
      }
    } else {
      return bad("field " + f.full_name() + " needs an integer, not " + kind(v));
    }
    return bad("field " + f.full_name() + ": " + shown(v) + " is out of its type's range");
  }

  // One value of field `f` of `m`: the singular value, or (repeated) an item added.
  Status value(const json& v, pb::Message& m, const Field& f, bool repeated, int depth) {
    const pb::Reflection& r = *m.GetReflection();
    switch (f.cpp_type()) {
      case Field::CPPTYPE_INT32: {
        int32_t x = 0;
        STRATA_RETURN_IF_ERROR(integer(v, f, x));
        if (repeated) {
          r.AddInt32(&m, &f, x);
        } else {
          r.SetInt32(&m, &f, x);
        }
        return Status::Ok();
      }
      case Field::CPPTYPE_INT64: {
        int64_t x = 0;
        STRATA_RETURN_IF_ERROR(integer(v, f, x));
        if (repeated) {
          r.AddInt64(&m, &f, x);
        } else {
          r.SetInt64(&m, &f, x);
        }
        return Status::Ok();
      }
      case Field::CPPTYPE_UINT32: {
        uint32_t x = 0;
        STRATA_RETURN_IF_ERROR(integer(v, f, x));
        if (repeated) {
          r.AddUInt32(&m, &f, x);
        } else {
          r.SetUInt32(&m, &f, x);
        }
        return Status::Ok();
      }
      case Field::CPPTYPE_UINT64: {
        uint64_t x = 0;
        STRATA_RETURN_IF_ERROR(integer(v, f, x));
        if (repeated) {
          r.AddUInt64(&m, &f, x);
        } else {
          r.SetUInt64(&m, &f, x);
        }
        return Status::Ok();
      }
      case Field::CPPTYPE_BOOL:
        if (!v.is_boolean()) return bad("field " + f.full_name() + " needs a boolean");
        if (repeated) {
          r.AddBool(&m, &f, v.get<bool>());
        } else {
          r.SetBool(&m, &f, v.get<bool>());
        }
        return Status::Ok();
      case Field::CPPTYPE_FLOAT:
      case Field::CPPTYPE_DOUBLE: {
        if (!v.is_number())
          return bad("field " + f.full_name() + " needs a number, not " + kind(v));
        const double x = v.get<double>();
        if (f.cpp_type() == Field::CPPTYPE_DOUBLE) {
          if (repeated) {
            r.AddDouble(&m, &f, x);
          } else {
            r.SetDouble(&m, &f, x);
          }
          return Status::Ok();
        }
        if (std::fabs(x) > std::numeric_limits<float>::max()) {
          return bad("field " + f.full_name() + ": " + shown(v) + " overflows a float");
        }
        const auto fx = static_cast<float>(x);
        if (repeated) {
          r.AddFloat(&m, &f, fx);
        } else {
          r.SetFloat(&m, &f, fx);
        }
        return Status::Ok();
      }
      case Field::CPPTYPE_ENUM: {
        const pb::EnumValueDescriptor* e = nullptr;
        if (v.is_string()) {
          e = f.enum_type()->FindValueByName(v.get_ref<const std::string&>());
        } else if (v.is_number_integer()) {
          int32_t n = 0;
          STRATA_RETURN_IF_ERROR(integer(v, f, n));
          // A proto3 enum is open: it keeps a number it does not name (decoding gives it back
          // as that number); a proto2 one would put it among the unknown fields.
          if (f.enum_type()->file()->syntax() == pb::FileDescriptor::SYNTAX_PROTO3) {
            if (repeated) {
              r.AddEnumValue(&m, &f, n);
            } else {
              r.SetEnumValue(&m, &f, n);
            }
            return Status::Ok();
          }
          e = f.enum_type()->FindValueByNumber(n);
        }
        if (!e)
          return bad("field " + f.full_name() + ": " + shown(v) + " is not a value of " +
                     f.enum_type()->full_name());
        if (repeated) {
          r.AddEnum(&m, &f, e);
        } else {
          r.SetEnum(&m, &f, e);
        }
        return Status::Ok();
      }
      case Field::CPPTYPE_STRING: {
        if (!v.is_string())
          return bad("field " + f.full_name() + " needs a string, not " + kind(v));
        std::string s = v.get<std::string>();
        if (f.type() == Field::TYPE_BYTES) {
          auto raw = from_latin1(s);
          if (!raw)
            return bad("field " + f.full_name() + ": bytes are a string of code points 0-255");
          s = std::move(*raw);
        }
        if (repeated) {
          r.AddString(&m, &f, std::move(s));
        } else {
          r.SetString(&m, &f, std::move(s));
        }
        return Status::Ok();
      }
      case Field::CPPTYPE_MESSAGE: {
        pb::Message* sub = repeated ? r.AddMessage(&m, &f) : r.MutableMessage(&m, &f);
        return message(v, *sub, depth + 1);
      }
    }
    return bad("field " + f.full_name() + " has an unknown type");
  }

  Status set(const json& v, pb::Message& m, const Field& f, int depth) {
    return value(v, m, f, false, depth);
  }
  Status add(const json& v, pb::Message& m, const Field& f, int depth) {
    if (v.is_null()) return bad("field " + f.full_name() + " holds a null item");
    return value(v, m, f, true, depth);
  }
};

}  // namespace

Result<std::string> protobuf_encode_row(const ProtobufSchema& schema, const json& row) {
  const detail::ProtoFile& file = schema.file();
  if (file.file->message_type_count() == 0) return bad("the schema declares no message");
  const pb::Descriptor& d = *file.file->message_type(0);
  std::unique_ptr<pb::Message> m(file.factory.GetPrototype(&d)->New());
  STRATA_RETURN_IF_ERROR(FromJson().message(row, *m, 0));
  if (!m->IsInitialized()) {
    return bad(d.full_name() + " misses required fields: " + m->InitializationErrorString());
  }
  std::string out(1, '\0');  // the message index [0]
  if (!m->AppendToString(&out)) return bad("the row does not serialize as " + d.full_name());
  return out;
}

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
