#include "protocol/wire/uuid.h"

#include <random>

namespace strata::protocol {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int decode_char(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

bool Uuid::is_zero() const {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

std::string Uuid::to_string() const {
  std::string out;
  out.reserve(22);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  // 16 = 5*3 + 1: one byte left -> two characters, no padding.
  uint32_t v = uint32_t{bytes[15]} << 16;
  out += kAlphabet[(v >> 18) & 63];
  out += kAlphabet[(v >> 12) & 63];
  return out;
}

std::optional<Uuid> Uuid::parse(std::string_view text) {
  if (text.size() != 22) return std::nullopt;
  Uuid u;
  uint32_t acc = 0;
  int bits = 0;
  size_t pos = 0;
  for (char c : text) {
    int d = decode_char(c);
    if (d < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (pos < 16) u.bytes[pos++] = static_cast<uint8_t>((acc >> bits) & 0xff);
    }
  }
  // The last character carries 4 padding bits that must be zero in canonical form.
  if ((acc & ((1u << bits) - 1)) != 0 || pos != 16) return std::nullopt;
  return u;
}

Uuid Uuid::random() {
  thread_local std::mt19937_64 gen([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  for (;;) {
    Uuid u;
    uint64_t hi = gen(), lo = gen();
    for (int i = 0; i < 8; ++i) {
      u.bytes[i] = static_cast<uint8_t>(hi >> (56 - 8 * i));
      u.bytes[8 + i] = static_cast<uint8_t>(lo >> (56 - 8 * i));
    }
    u.bytes[6] = static_cast<uint8_t>((u.bytes[6] & 0x0f) | 0x40);  // version 4
    u.bytes[8] = static_cast<uint8_t>((u.bytes[8] & 0x3f) | 0x80);  // IETF variant
    Uuid metadata_topic;
    metadata_topic.bytes[15] = 1;
    if (u.is_zero() || u == metadata_topic || u.to_string()[0] == '-') continue;
    return u;
  }
}

}  // namespace strata::protocol
