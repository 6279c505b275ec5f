// Field codec: overloaded put/get/size/equals for every Kafka field type, used by the generated
// message code (protocol/messages/*.cc, emitted by tools/codegen). Each call takes the same
// arguments: the value, whether the version is flexible (compact encodings), whether the field is
// nullable in this version, and the message version (passed on to nested structs).
// Header-only, stateless; any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/wire/errors.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/records.h"
#include "protocol/wire/sizes.h"
#include "protocol/wire/uuid.h"
#include "protocol/wire/writer.h"

namespace strata::protocol::gen {

using Bytes = std::span<const uint8_t>;

// ---- fixed-width primitives --------------------------------------------------------------------
#define STRATA_GEN_FIXED(T, W, R, N)                                   \
  inline void put(Writer& w, T v, bool, bool, int16_t) { w.W(v); }     \
  inline void get(Reader& r, T& v, bool, bool, int16_t) { v = r.R(); } \
  inline size_t size(T, bool, bool, int16_t) { return N; }             \
  inline bool equals(T a, T b) { return a == b; }
STRATA_GEN_FIXED(int8_t, write_int8, read_int8, 1)
STRATA_GEN_FIXED(int16_t, write_int16, read_int16, 2)
STRATA_GEN_FIXED(int32_t, write_int32, read_int32, 4)
STRATA_GEN_FIXED(int64_t, write_int64, read_int64, 8)
STRATA_GEN_FIXED(uint16_t, write_uint16, read_uint16, 2)
STRATA_GEN_FIXED(bool, write_bool, read_bool, 1)
#undef STRATA_GEN_FIXED

// ErrorCode is int16 on the wire. Any value is kept as read (no validation), so codes this build
// does not know round-trip unchanged.
inline void put(Writer& w, ErrorCode v, bool, bool, int16_t) {
  w.write_int16(static_cast<int16_t>(v));
}
inline void get(Reader& r, ErrorCode& v, bool, bool, int16_t) {
  v = static_cast<ErrorCode>(r.read_int16());
}
inline size_t size(ErrorCode, bool, bool, int16_t) { return 2; }
inline bool equals(ErrorCode a, ErrorCode b) { return a == b; }

inline void put(Writer& w, double v, bool, bool, int16_t) { w.write_float64(v); }
inline void get(Reader& r, double& v, bool, bool, int16_t) { v = r.read_float64(); }
inline size_t size(double, bool, bool, int16_t) { return 8; }
inline bool equals(double a, double b) { return a == b || (a != a && b != b); }

inline void put(Writer& w, const Uuid& v, bool, bool, int16_t) { w.write_uuid(v); }
inline void get(Reader& r, Uuid& v, bool, bool, int16_t) { v = r.read_uuid(); }
inline size_t size(const Uuid&, bool, bool, int16_t) { return 16; }
inline bool equals(const Uuid& a, const Uuid& b) { return a == b; }

// ---- strings -----------------------------------------------------------------------------------
inline void put(Writer& w, const std::string& v, bool flex, bool, int16_t) {
  if (flex) {
    w.write_compact_string(v);
  } else {
    w.write_string(v);
  }
}
inline void get(Reader& r, std::string& v, bool flex, bool, int16_t) {
  v = flex ? r.read_compact_string() : r.read_string();
}
inline size_t size(const std::string& v, bool flex, bool, int16_t) {
  return wire_size::string(v, flex);
}
inline bool equals(const std::string& a, const std::string& b) { return a == b; }

// A null value in a version where the field is not nullable is written as "".
inline void put(Writer& w, const std::optional<std::string>& v, bool flex, bool nullable,
                int16_t version) {
  if (v || nullable) {
    if (flex) {
      w.write_compact_nullable_string(v);
    } else {
      w.write_nullable_string(v);
    }
  } else {
    put(w, std::string(), flex, false, version);
  }
}
inline void get(Reader& r, std::optional<std::string>& v, bool flex, bool nullable, int16_t) {
  if (nullable) {
    v = flex ? r.read_compact_nullable_string() : r.read_nullable_string();
  } else {
    v = flex ? r.read_compact_string() : r.read_string();
  }
}
inline size_t size(const std::optional<std::string>& v, bool flex, bool, int16_t) {
  return v ? wire_size::string(*v, flex) : (flex ? 1 : 2);
}
inline bool equals(const std::optional<std::string>& a, const std::optional<std::string>& b) {
  return a == b;
}

// ---- bytes (views) -----------------------------------------------------------------------------
inline void put(Writer& w, Bytes v, bool flex, bool, int16_t) {
  if (flex) {
    w.write_compact_bytes(v);
  } else {
    w.write_bytes(v);
  }
}
inline void get(Reader& r, Bytes& v, bool flex, bool, int16_t) {
  v = flex ? r.read_compact_bytes() : r.read_bytes();
}
inline size_t size(Bytes v, bool flex, bool, int16_t) { return wire_size::bytes(v, flex); }
inline bool equals(Bytes a, Bytes b) { return std::ranges::equal(a, b); }

inline void put(Writer& w, const std::optional<Bytes>& v, bool flex, bool nullable,
                int16_t version) {
  if (v || nullable) {
    if (flex) {
      w.write_compact_nullable_bytes(v);
    } else {
      w.write_nullable_bytes(v);
    }
  } else {
    put(w, Bytes(), flex, false, version);
  }
}
inline void get(Reader& r, std::optional<Bytes>& v, bool flex, bool nullable, int16_t) {
  if (nullable) {
    v = flex ? r.read_compact_nullable_bytes() : r.read_nullable_bytes();
  } else {
    v = flex ? r.read_compact_bytes() : r.read_bytes();
  }
}
inline size_t size(const std::optional<Bytes>& v, bool flex, bool, int16_t) {
  return v ? wire_size::bytes(*v, flex) : (flex ? 1 : 4);
}
inline bool equals(const std::optional<Bytes>& a, const std::optional<Bytes>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || std::ranges::equal(*a, *b);
}

// ---- records -----------------------------------------------------------------------------------
inline void put(Writer& w, const Records& v, bool flex, bool, int16_t) { w.write_records(v, flex); }
inline void get(Reader& r, Records& v, bool flex, bool, int16_t) { v = r.read_records(flex); }
inline size_t size(const Records& v, bool flex, bool, int16_t) {
  if (v.is_null) return flex ? 1 : 4;
  uint32_t n = v.size();
  return (flex ? wire_size::uvarint(n + 1) : 4) + n;
}
inline bool equals(const Records& a, const Records& b) { return a == b; }

// ---- nested structs (generated types with encode/decode/size) ----------------------------------
template <typename T>
concept Message = requires(const T& c, T& m, Writer& w, Reader& r, int16_t v) {
  c.encode(w, v);
  m.decode(r, v);
  { c.size(v) } -> std::convertible_to<size_t>;
};

template <Message T>
void put(Writer& w, const T& v, bool, bool, int16_t version) {
  v.encode(w, version);
}
template <Message T>
void get(Reader& r, T& v, bool, bool, int16_t version) {
  v.decode(r, version);
}
template <Message T>
size_t size(const T& v, bool, bool, int16_t version) {
  return v.size(version);
}
template <Message T>
bool equals(const T& a, const T& b) {
  return a == b;
}

// ---- arrays ------------------------------------------------------------------------------------
template <typename T>
void put_elements(Writer& w, const std::vector<T>& v, bool flex, int16_t version) {
  if (flex) {
    w.write_compact_array_length(static_cast<int32_t>(v.size()));
  } else {
    w.write_array_length(static_cast<int32_t>(v.size()));
  }
  for (const auto& e : v) put(w, e, flex, false, version);
}
template <typename T>
void put(Writer& w, const std::vector<T>& v, bool flex, bool, int16_t version) {
  put_elements(w, v, flex, version);
}
template <typename T>
void put(Writer& w, const std::optional<std::vector<T>>& v, bool flex, bool nullable,
         int16_t version) {
  if (v) {
    put_elements(w, *v, flex, version);
  } else if (flex) {
    w.write_compact_array_length(nullable ? -1 : 0);
  } else {
    w.write_array_length(nullable ? -1 : 0);
  }
}

// Returns the element count, or -1 for null (DecodeError when null is not allowed). The count is
// already checked against the remaining bytes; reservation is capped so a large but plausible
// count cannot multiply memory before the elements are actually read.
inline int32_t get_array_length(Reader& r, bool flex, bool nullable) {
  int32_t n = flex ? r.read_compact_array_length() : r.read_array_length();
  if (n < 0 && !nullable) throw DecodeError("null array where non-null required");
  return n;
}
template <typename T>
void get_elements(Reader& r, std::vector<T>& v, int32_t n, bool flex, int16_t version) {
  v.clear();
  v.reserve(std::min<size_t>(static_cast<size_t>(n), 1024));
  for (int32_t i = 0; i < n; ++i) {
    v.emplace_back();
    get(r, v.back(), flex, false, version);
  }
}
template <typename T>
void get(Reader& r, std::vector<T>& v, bool flex, bool, int16_t version) {
  get_elements(r, v, get_array_length(r, flex, false), flex, version);
}
template <typename T>
void get(Reader& r, std::optional<std::vector<T>>& v, bool flex, bool nullable, int16_t version) {
  int32_t n = get_array_length(r, flex, nullable);
  if (n < 0) {
    v.reset();
    return;
  }
  v.emplace();
  get_elements(r, *v, n, flex, version);
}

template <typename T>
size_t size_elements(const std::vector<T>& v, bool flex, int16_t version) {
  size_t n = wire_size::array_length(static_cast<int64_t>(v.size()), flex);
  if constexpr (std::is_arithmetic_v<T>) {
    n += v.size() * sizeof(T);
  } else {
    for (const auto& e : v) n += size(e, flex, false, version);
  }
  return n;
}
template <typename T>
size_t size(const std::vector<T>& v, bool flex, bool, int16_t version) {
  return size_elements(v, flex, version);
}
template <typename T>
size_t size(const std::optional<std::vector<T>>& v, bool flex, bool, int16_t version) {
  if (!v) return flex ? 1 : 4;
  return size_elements(*v, flex, version);
}

template <typename T>
bool equals(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!equals(a[i], b[i])) return false;
  }
  return true;
}
template <typename T>
bool equals(const std::optional<std::vector<T>>& a, const std::optional<std::vector<T>>& b) {
  if (a.has_value() != b.has_value()) return false;
  return !a || equals(*a, *b);
}

}  // namespace strata::protocol::gen
