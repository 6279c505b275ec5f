#include "protocol/wire/reader.h"

#include <bit>

namespace strata::protocol {

void Reader::throw_truncated(size_t n) const {
  throw DecodeError("truncated input: need " + std::to_string(n) + " bytes at offset " +
                    std::to_string(pos_) + ", have " + std::to_string(remaining()));
}

double Reader::read_float64() { return std::bit_cast<double>(read_be<uint64_t>()); }

Uuid Reader::read_uuid() {
  need(16);
  Uuid u;
  std::memcpy(u.bytes.data(), data_ + pos_, 16);
  pos_ += 16;
  return u;
}

uint32_t Reader::read_uvarint_slow() {
  uint32_t value = 0;
  for (int i = 0; i < 5; ++i) {
    need(1);
    uint8_t b = data_[pos_++];
    if (i == 4 && (b & 0xf0) != 0) throw DecodeError("varint overflows 32 bits");
    value |= uint32_t{b & 0x7fu} << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  throw DecodeError("varint longer than 5 bytes");
}

uint64_t Reader::read_uvarlong() {
  uint64_t value = 0;
  for (int i = 0; i < 10; ++i) {
    need(1);
    uint8_t b = data_[pos_++];
    if (i == 9 && (b & 0xfe) != 0) throw DecodeError("varlong overflows 64 bits");
    value |= uint64_t{b & 0x7fu} << (7 * i);
    if ((b & 0x80) == 0) return value;
  }
  throw DecodeError("varlong longer than 10 bytes");
}

size_t Reader::checked_length(int64_t len, const char* what) {
  if (len < 0) throw DecodeError(std::string("negative ") + what + " length");
  if (static_cast<uint64_t>(len) > remaining()) {
    throw DecodeError(std::string(what) + " length " + std::to_string(len) + " exceeds remaining " +
                      std::to_string(remaining()));
  }
  return static_cast<size_t>(len);
}

std::string Reader::read_string() {
  int16_t len = read_int16();
  size_t n = checked_length(len, "string");
  std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return s;
}

std::optional<std::string> Reader::read_nullable_string() {
  int16_t len = read_int16();
  if (len == -1) return std::nullopt;
  size_t n = checked_length(len, "string");
  std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return s;
}

std::string Reader::read_compact_string() {
  uint32_t len = read_uvarint();
  if (len == 0) throw DecodeError("null compact string where non-null required");
  size_t n = checked_length(int64_t{len} - 1, "compact string");
  if (n > 0x7fff) throw DecodeError("compact string longer than 32767 bytes");
  std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return s;
}

std::optional<std::string> Reader::read_compact_nullable_string() {
  uint32_t len = read_uvarint();
  if (len == 0) return std::nullopt;
  size_t n = checked_length(int64_t{len} - 1, "compact string");
  if (n > 0x7fff) throw DecodeError("compact string longer than 32767 bytes");
  std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return s;
}

std::span<const uint8_t> Reader::read_bytes() {
  int32_t len = read_int32();
  return read_raw(checked_length(len, "bytes"));
}

std::optional<std::span<const uint8_t>> Reader::read_nullable_bytes() {
  int32_t len = read_int32();
  if (len == -1) return std::nullopt;
  return read_raw(checked_length(len, "bytes"));
}

std::span<const uint8_t> Reader::read_compact_bytes() {
  uint32_t len = read_uvarint();
  if (len == 0) throw DecodeError("null compact bytes where non-null required");
  return read_raw(checked_length(int64_t{len} - 1, "compact bytes"));
}

std::optional<std::span<const uint8_t>> Reader::read_compact_nullable_bytes() {
  uint32_t len = read_uvarint();
  if (len == 0) return std::nullopt;
  return read_raw(checked_length(int64_t{len} - 1, "compact bytes"));
}

Records Reader::read_records(bool compact) {
  auto bytes = compact ? read_compact_nullable_bytes() : read_nullable_bytes();
  Records r;
  if (!bytes) return r;
  return Records::view(*bytes);
}

int32_t Reader::read_array_length() {
  int32_t n = read_int32();
  if (n == -1) return -1;
  if (n < 0) throw DecodeError("negative array length");
  checked_length(n, "array");
  return n;
}

int32_t Reader::read_compact_array_length() {
  uint32_t n = read_uvarint();
  if (n == 0) return -1;
  checked_length(int64_t{n} - 1, "compact array");
  return static_cast<int32_t>(n - 1);
}

}  // namespace strata::protocol
