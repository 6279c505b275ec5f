// Writer: appends Kafka wire primitives (big-endian, varints, compact forms) to an owned buffer.
// In-memory records parts are copied into the buffer; file-range parts are recorded as external
// segments (`external()`: buffer position + part) so the connection can emit
// buffer[0:pos1] + part1 + buffer[pos1:pos2] + ... with writev/sendfile.
// Owned by one encoding call/connection; not thread-safe.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/wire/records.h"
#include "protocol/wire/uuid.h"

namespace strata::protocol {

class Writer {
 public:
  Writer() = default;
  explicit Writer(size_t reserve) { buf_.reserve(reserve); }

  // Bytes in the owned buffer (external file parts not included).
  size_t size() const { return buf_.size(); }
  // Bytes on the wire: buffer plus external parts.
  size_t total_size() const { return buf_.size() + external_bytes_; }
  const std::vector<uint8_t>& buffer() const { return buf_; }
  std::vector<uint8_t>& buffer() { return buf_; }
  const std::vector<std::pair<size_t, RecordsPart>>& external() const { return external_; }
  void reserve(size_t n) { buf_.reserve(n); }
  void clear() {
    buf_.clear();
    external_.clear();
    external_bytes_ = 0;
    overflowed_ = false;
  }
  // A string longer than its int16 length can say (32,767 bytes) was written: what the buffer
  // holds is not a valid encoding and must not be sent (Kafka's generated writers throw).
  bool overflowed() const { return overflowed_; }

  void write_int8(int8_t v) { put_be(static_cast<uint8_t>(v)); }
  void write_int16(int16_t v) { put_be(static_cast<uint16_t>(v)); }
  void write_int32(int32_t v) { put_be(static_cast<uint32_t>(v)); }
  void write_int64(int64_t v) { put_be(static_cast<uint64_t>(v)); }
  void write_uint16(uint16_t v) { put_be(v); }
  void write_uint32(uint32_t v) { put_be(v); }
  void write_float64(double v);
  void write_bool(bool v) { buf_.push_back(v ? 1 : 0); }
  void write_uuid(const Uuid& u) { write_raw(u.bytes); }

  void write_uvarint(uint32_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<uint8_t>(v));
  }
  void write_uvarlong(uint64_t v) {
    while (v >= 0x80) {
      buf_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    buf_.push_back(static_cast<uint8_t>(v));
  }
  void write_varint(int32_t v) {
    write_uvarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
  }
  void write_varlong(int64_t v) {
    write_uvarlong((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }

  void write_string(std::string_view s);
  void write_nullable_string(const std::optional<std::string>& s);
  void write_compact_string(std::string_view s);
  void write_compact_nullable_string(const std::optional<std::string>& s);

  void write_bytes(std::span<const uint8_t> b);
  void write_nullable_bytes(const std::optional<std::span<const uint8_t>>& b);
  void write_compact_bytes(std::span<const uint8_t> b);
  void write_compact_nullable_bytes(const std::optional<std::span<const uint8_t>>& b);

  // A records field: length prefix (int32, or compact uvarint length+1; null -> -1 / 0) then the
  // parts. In-memory parts are copied; file parts become external segments.
  void write_records(const Records& r, bool compact);

  void write_array_length(int32_t n) { write_int32(n); }  // -1 = null
  void write_compact_array_length(int32_t n) {            // -1 = null
    write_uvarint(static_cast<uint32_t>(n + 1));
  }
  void write_raw(std::span<const uint8_t> b) {
    if (b.empty()) return;
    size_t at = buf_.size();
    buf_.resize(at + b.size());
    std::memcpy(buf_.data() + at, b.data(), b.size());
  }
  // An empty tagged-field section.
  void write_empty_tagged_fields() { buf_.push_back(0); }

  // Overwrites 4 bytes at `pos` (frame-size back-patching).
  void patch_int32(size_t pos, int32_t v);

 private:
  template <typename T>
  void put_be(T v) {
    // resize + stores rather than insert(): GCC 12 at -O3 reports false stringop-overflows
    // for small constant-size vector::insert calls.
    size_t at = buf_.size();
    buf_.resize(at + sizeof(T));
    uint8_t* out = buf_.data() + at;
    for (size_t i = 0; i < sizeof(T); ++i) {
      out[i] = static_cast<uint8_t>(v >> (8 * (sizeof(T) - 1 - i)));
    }
  }

  std::vector<uint8_t> buf_;
  std::vector<std::pair<size_t, RecordsPart>> external_;
  size_t external_bytes_ = 0;
  bool overflowed_ = false;
};

// Materialises buffer + external parts (pread for file parts) into one vector. For tests and
// small responses; aborts nothing: an unreadable file part is filled with what pread returned
// and the rest left zero.
std::vector<uint8_t> flatten(const Writer& w);

}  // namespace strata::protocol
