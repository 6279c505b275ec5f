// Avro binary encoding to and from JSON values; see avro_codec.h.
#include "protocol/schema/avro_codec.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "protocol/base/utf8.h"
#include "protocol/schema/avro_graph.h"

namespace strata::protocol::schema {

namespace {

using detail::AvroNode;
using detail::Kind;
using json = nlohmann::json;

constexpr int kMaxDepth = 64;

Status bad(std::string message) { return Status(Errc::invalid_argument, std::move(message)); }

// Where an error happened, for messages: "field amount", "item 3 of tags", ...
std::string at(const std::string& where, const std::string& what) {
  return where.empty() ? what : where + ": " + what;
}

class Decoder {
 public:
  explicit Decoder(std::span<const uint8_t> data) : data_(data), budget_(data.size() + 1024) {}

  Status value(const AvroNode* n, json& out, const std::string& where, int depth) {
    if (depth > kMaxDepth) return bad(at(where, "values nest deeper than 64 levels"));
    // Every value costs one unit: zero-byte values (null, empty records) in a block of a huge
    // count cannot make work or memory grow past the input's size.
    if (budget_-- == 0) return bad(at(where, "more values than the input can hold"));
    switch (n->kind) {
      case Kind::null:
        out = nullptr;
        return Status::Ok();
      case Kind::boolean: {
        if (pos_ >= data_.size()) return bad(at(where, "truncated boolean"));
        const uint8_t b = data_[pos_++];
        if (b > 1) return bad(at(where, "boolean byte " + std::to_string(b)));
        out = b == 1;
        return Status::Ok();
      }
      case Kind::int_:
      case Kind::long_: {
        int64_t v = 0;
        STRATA_RETURN_IF_ERROR(varlong(v, where));
        if (n->kind == Kind::int_ &&
            (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
          return bad(at(where, "int out of range"));
        }
        out = v;
        return Status::Ok();
      }
      case Kind::float_:
      case Kind::double_: {
        const size_t size = n->kind == Kind::float_ ? 4 : 8;
        if (data_.size() - pos_ < size)
          return bad(at(where, "truncated " + std::string(kind_name(n->kind))));
        double d;
        if (size == 4) {
          float f;
          std::memcpy(&f, data_.data() + pos_, 4);  // little-endian, as the host
          d = f;
        } else {
          std::memcpy(&d, data_.data() + pos_, 8);
        }
        pos_ += size;
        if (!std::isfinite(d)) return bad(at(where, "NaN or infinity has no JSON form"));
        out = d;
        return Status::Ok();
      }
      case Kind::string:
      case Kind::bytes: {
        std::string_view s;
        STRATA_RETURN_IF_ERROR(length_prefixed(s, where));
        if (n->kind == Kind::string) {
          if (!valid_utf8(s)) return bad(at(where, "string is not UTF-8"));
          out = std::string(s);
        } else {
          out = latin1(s);
        }
        return Status::Ok();
      }
      case Kind::fixed: {
        if (static_cast<int64_t>(data_.size() - pos_) < n->size)
          return bad(at(where, "truncated fixed"));
        out = latin1(std::string_view(reinterpret_cast<const char*>(data_.data() + pos_),
                                      static_cast<size_t>(n->size)));
        pos_ += static_cast<size_t>(n->size);
        return Status::Ok();
      }
      case Kind::enum_: {
        int64_t i = 0;
        STRATA_RETURN_IF_ERROR(varlong(i, where));
        if (i < 0 || i >= static_cast<int64_t>(n->symbols.size())) {
          return bad(at(where, "enum index " + std::to_string(i) + " out of range"));
        }
        out = n->symbols[static_cast<size_t>(i)];
        return Status::Ok();
      }
      case Kind::union_: {
        int64_t i = 0;
        STRATA_RETURN_IF_ERROR(varlong(i, where));
        if (i < 0 || i >= static_cast<int64_t>(n->branches.size())) {
          return bad(at(where, "union branch " + std::to_string(i) + " out of range"));
        }
        return value(n->branches[static_cast<size_t>(i)], out, where, depth + 1);
      }
      case Kind::record: {
        out = json::object();
        for (const auto& f : n->fields) {
          STRATA_RETURN_IF_ERROR(value(f.type, out[f.name], "field " + f.name, depth + 1));
        }
        return Status::Ok();
      }
      case Kind::array:
      case Kind::map: {
        const bool is_map = n->kind == Kind::map;
        out = is_map ? json::object() : json::array();
        for (;;) {
          int64_t count = 0;
          STRATA_RETURN_IF_ERROR(varlong(count, where));
          if (count == 0) return Status::Ok();
          if (count < 0) {  // a negative count is followed by the block's size in bytes
            if (count == std::numeric_limits<int64_t>::min())
              return bad(at(where, "bad block count"));
            count = -count;
            int64_t bytes = 0;
            STRATA_RETURN_IF_ERROR(varlong(bytes, where));
          }
          if (static_cast<uint64_t>(count) > budget_)
            return bad(at(where, "more values than the input can hold"));
          for (int64_t i = 0; i < count; ++i) {
            const std::string item = "item " + std::to_string(out.size()) + " of " + where;
            if (is_map) {
              std::string_view key;
              STRATA_RETURN_IF_ERROR(length_prefixed(key, where));
              if (!valid_utf8(key)) return bad(at(where, "map key is not UTF-8"));
              STRATA_RETURN_IF_ERROR(value(n->child, out[std::string(key)], item, depth + 1));
            } else {
              json v;
              STRATA_RETURN_IF_ERROR(value(n->child, v, item, depth + 1));
              out.push_back(std::move(v));
            }
          }
        }
      }
    }
    return bad(at(where, "unknown type"));
  }

  bool done() const { return pos_ == data_.size(); }
  size_t pos() const { return pos_; }

 private:
  Status varlong(int64_t& out, const std::string& where) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos_ >= data_.size()) return bad(at(where, "truncated varint"));
      const uint8_t b = data_[pos_++];
      if (shift == 63 && b > 1) return bad(at(where, "varint longer than 64 bits"));
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        out = static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));  // zigzag
        return Status::Ok();
      }
    }
    return bad(at(where, "varint longer than 64 bits"));
  }

  Status length_prefixed(std::string_view& out, const std::string& where) {
    int64_t len = 0;
    STRATA_RETURN_IF_ERROR(varlong(len, where));
    if (len < 0 || static_cast<uint64_t>(len) > data_.size() - pos_) {
      return bad(at(where, "length " + std::to_string(len) + " past the end of the value"));
    }
    out = std::string_view(reinterpret_cast<const char*>(data_.data() + pos_),
                           static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return Status::Ok();
  }

  static std::string latin1(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) append_latin1(out, static_cast<uint8_t>(c));
    return out;
  }

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  size_t budget_;
};

void put_long(std::string& out, int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    out += static_cast<char>((z & 0x7F) | 0x80);
    z >>= 7;
  }
  out += static_cast<char>(z);
}

Status encode(const AvroNode* n, const json& v, std::string& out, const std::string& where,
              int depth) {
  if (depth > kMaxDepth) return bad(at(where, "values nest deeper than 64 levels"));
  // Error text only: replace what is not UTF-8 (dump would throw on it).
  auto shown = [&] { return v.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 60); };
  auto mismatch = [&] {
    return bad(at(where, shown() + " is not a " + std::string(kind_name(n->kind))));
  };
  switch (n->kind) {
    case Kind::null:
      return v.is_null() ? Status::Ok() : mismatch();
    case Kind::boolean:
      if (!v.is_boolean()) return mismatch();
      out += v.get<bool>() ? '\1' : '\0';
      return Status::Ok();
    case Kind::int_:
    case Kind::long_: {
      if (!v.is_number_integer()) return mismatch();
      if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        return mismatch();
      const int64_t x = v.get<int64_t>();
      if (n->kind == Kind::int_ && (x < INT32_MIN || x > INT32_MAX)) return mismatch();
      put_long(out, x);
      return Status::Ok();
    }
    case Kind::float_:
    case Kind::double_: {
      if (!v.is_number()) return mismatch();
      const double d = v.get<double>();
      if (n->kind == Kind::float_) {
        if (std::fabs(d) > std::numeric_limits<float>::max()) {
          return bad(at(where, shown() + " is beyond a float's range"));
        }
        const float f = static_cast<float>(d);
        out.append(reinterpret_cast<const char*>(&f), 4);
      } else {
        out.append(reinterpret_cast<const char*>(&d), 8);
      }
      return Status::Ok();
    }
    case Kind::string:
      if (!v.is_string()) return mismatch();
      put_long(out, static_cast<int64_t>(v.get_ref<const std::string&>().size()));
      out += v.get_ref<const std::string&>();
      return Status::Ok();
    case Kind::bytes:
    case Kind::fixed: {
      if (!v.is_string()) return mismatch();
      auto raw = from_latin1(v.get_ref<const std::string&>());
      if (!raw) return bad(at(where, "bytes are a string of code points 0-255"));
      if (n->kind == Kind::fixed) {
        if (static_cast<int64_t>(raw->size()) != n->size) {
          return bad(at(where, "fixed of size " + std::to_string(n->size) + " given " +
                                   std::to_string(raw->size()) + " bytes"));
        }
      } else {
        put_long(out, static_cast<int64_t>(raw->size()));
      }
      out += *raw;
      return Status::Ok();
    }
    case Kind::enum_: {
      if (!v.is_string()) return mismatch();
      for (size_t i = 0; i < n->symbols.size(); ++i) {
        if (n->symbols[i] == v.get_ref<const std::string&>()) {
          put_long(out, static_cast<int64_t>(i));
          return Status::Ok();
        }
      }
      return bad(at(where, shown() + " is not a symbol of enum " + n->full_name));
    }
    case Kind::union_: {
      for (size_t i = 0; i < n->branches.size(); ++i) {
        // The null branch of an optional field holds only null: not tried (and no error text
        // built) for every value that is set.
        if (n->branches[i]->kind == Kind::null && !v.is_null()) continue;
        std::string branch;
        put_long(branch, static_cast<int64_t>(i));
        if (encode(n->branches[i], v, branch, where, depth + 1).ok()) {
          out += branch;
          return Status::Ok();
        }
      }
      return bad(at(where, shown() + " fits no branch of the union"));
    }
    case Kind::record: {
      if (!v.is_object()) return mismatch();
      for (const auto& f : n->fields) {
        const std::string fw = "field " + f.name;
        if (auto it = v.find(f.name); it != v.end()) {
          STRATA_RETURN_IF_ERROR(encode(f.type, *it, out, fw, depth + 1));
          continue;
        }
        if (!f.default_value) return bad(at(fw, "missing, and the field has no default"));
        const json d = json::parse(f.default_value->dump());
        // A union's default is a value of its first branch (the spec).
        const AvroNode* t = f.type->kind == Kind::union_ ? f.type->branches[0] : f.type;
        if (f.type->kind == Kind::union_) put_long(out, 0);
        STRATA_RETURN_IF_ERROR(encode(t, d, out, fw, depth + 1));
      }
      return Status::Ok();
    }
    case Kind::array:
    case Kind::map: {
      if (n->kind == Kind::array ? !v.is_array() : !v.is_object()) return mismatch();
      if (!v.empty()) {
        put_long(out, static_cast<int64_t>(v.size()));
        size_t i = 0;
        for (auto it = v.begin(); it != v.end(); ++it, ++i) {
          const std::string item = "item " + std::to_string(i) + " of " + where;
          if (n->kind == Kind::map) {
            put_long(out, static_cast<int64_t>(it.key().size()));
            out += it.key();
          }
          STRATA_RETURN_IF_ERROR(encode(n->child, *it, out, item, depth + 1));
        }
      }
      put_long(out, 0);
      return Status::Ok();
    }
  }
  return mismatch();
}

}  // namespace

Result<json> avro_decode(const AvroSchema& schema, std::span<const uint8_t> data) {
  Decoder d(data);
  json out;
  STRATA_RETURN_IF_ERROR(d.value(detail::AvroAccess::graph(schema).root, out, "", 0));
  if (!d.done()) {
    return bad(std::to_string(data.size() - d.pos()) + " bytes left after the value");
  }
  return out;
}

Result<std::string> avro_encode(const AvroSchema& schema, const json& value) {
  std::string out;
  STRATA_RETURN_IF_ERROR(encode(detail::AvroAccess::graph(schema).root, value, out, "", 0));
  return out;
}

}  // namespace strata::protocol::schema
