// Reader: bounds-checked big-endian decoder over a borrowed byte range (Kafka wire primitives).
// Every read checks the remaining bytes first and throws DecodeError on malformed input; lengths
// are validated against remaining() before anything is allocated. Bytes/records are returned as
// views into the buffer (no copy): the caller keeps the buffer alive.
// Owned by one decoding call; not thread-safe (cheap to create per request).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "protocol/wire/decode_error.h"
#include "protocol/wire/records.h"
#include "protocol/wire/uuid.h"

namespace strata::protocol {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  explicit Reader(std::span<const uint8_t> bytes) : data_(bytes.data()), size_(bytes.size()) {}

  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }
  const uint8_t* current() const { return data_ + pos_; }
  void skip(size_t n) {
    need(n);
    pos_ += n;
  }

  // Fixed-width, big-endian.
  int8_t read_int8() { return static_cast<int8_t>(read_be<uint8_t>()); }
  int16_t read_int16() { return static_cast<int16_t>(read_be<uint16_t>()); }
  int32_t read_int32() { return static_cast<int32_t>(read_be<uint32_t>()); }
  int64_t read_int64() { return static_cast<int64_t>(read_be<uint64_t>()); }
  uint16_t read_uint16() { return read_be<uint16_t>(); }
  uint32_t read_uint32() { return read_be<uint32_t>(); }
  double read_float64();
  bool read_bool() { return read_be<uint8_t>() != 0; }
  Uuid read_uuid();

  // Varints: unsigned (max 5 bytes), signed zigzag varint (5) and varlong (10).
  uint32_t read_uvarint() {
    if (remaining() > 0 && data_[pos_] < 0x80) return data_[pos_++];
    return read_uvarint_slow();
  }
  uint64_t read_uvarlong();
  int32_t read_varint() {
    uint32_t v = read_uvarint();
    return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1));
  }
  int64_t read_varlong() {
    uint64_t v = read_uvarlong();
    return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
  }

  // Strings: int16 length (-1 = null), compact = uvarint length+1 (0 = null).
  std::string read_string();
  std::optional<std::string> read_nullable_string();
  std::string read_compact_string();
  std::optional<std::string> read_compact_nullable_string();

  // Bytes: int32 length (-1 = null), compact = uvarint length+1 (0 = null). Views, no copy.
  std::span<const uint8_t> read_bytes();
  std::optional<std::span<const uint8_t>> read_nullable_bytes();
  std::span<const uint8_t> read_compact_bytes();
  std::optional<std::span<const uint8_t>> read_compact_nullable_bytes();
  // A records field: nullable bytes (compact when `compact`) as one in-memory part.
  Records read_records(bool compact);
  // n raw bytes as a view.
  std::span<const uint8_t> read_raw(size_t n) {
    need(n);
    std::span<const uint8_t> out(data_ + pos_, n);
    pos_ += n;
    return out;
  }

  // Array lengths; -1 means null. The count is checked against remaining() (every element takes
  // at least one byte), so a hostile length throws before any allocation.
  int32_t read_array_length();
  int32_t read_compact_array_length();

  // Tagged-field section: uvarint count, then (uvarint tag, uvarint size, data) per field.
  // `on_field(uint32_t tag, uint32_t size)` returns true when it decoded the field (it must consume
  // exactly `size` bytes) or false to have the field skipped.
  template <typename F>
  void read_tagged_fields(F&& on_field) {
    uint32_t count = read_uvarint();
    if (count > remaining()) throw DecodeError("tagged field count exceeds remaining bytes");
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t tag = read_uvarint();
      uint32_t size = read_uvarint();
      need(size);
      size_t start = pos_;
      if (!on_field(tag, size)) {
        pos_ += size;
      } else if (pos_ - start != size) {
        throw DecodeError("tagged field " + std::to_string(tag) + " size mismatch");
      }
    }
  }
  // Skips a whole tagged-field section.
  void skip_tagged_fields() {
    read_tagged_fields([](uint32_t, uint32_t) { return false; });
  }

 private:
  void need(size_t n) const {
    if (n > remaining()) throw_truncated(n);
  }
  [[noreturn]] void throw_truncated(size_t n) const;
  uint32_t read_uvarint_slow();
  size_t checked_length(int64_t len, const char* what);

  template <typename T>
  T read_be() {
    need(sizeof(T));
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | data_[pos_ + i]);
    pos_ += sizeof(T);
    return v;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace strata::protocol
