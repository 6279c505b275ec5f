#include "pkindex/row_format.h"

namespace strata::pkindex::row_format {

void put_be64(uint8_t* p, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  for (int i = 7; i >= 0; --i) {
    p[i] = static_cast<uint8_t>(u);
    u >>= 8;
  }
}

int64_t get_be64(const uint8_t* p) {
  uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
  return static_cast<int64_t>(u);
}

void append_row_key(std::string& out, std::span<const uint8_t> key) {
  out.push_back(kRowPrefix);
  out.append(reinterpret_cast<const char*>(key.data()), key.size());
}

void encode_row(std::string& out, int64_t offset, int64_t timestamp, std::optional<int64_t> version,
                std::span<const uint8_t> value, std::optional<int64_t> append_time) {
  const size_t start = out.size();
  out.resize(start + kFixedSize + (version ? 8 : 0) + (append_time ? 8 : 0));
  auto* p = reinterpret_cast<uint8_t*>(out.data() + start);
  p[0] = kFormat;
  p[1] = static_cast<uint8_t>((version ? kHasVersion : 0) | (append_time ? kHasAppendTime : 0));
  put_be64(p + 2, offset);
  put_be64(p + 10, timestamp);
  size_t pos = kFixedSize;
  if (version) {
    put_be64(p + pos, *version);
    pos += 8;
  }
  if (append_time) put_be64(p + pos, *append_time);
  out.append(reinterpret_cast<const char*>(value.data()), value.size());
}

void append_history_prefix(std::string& out, std::span<const uint8_t> key) {
  const auto n = static_cast<uint32_t>(key.size());
  out.push_back(kHistoryPrefix);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
  out.append(reinterpret_cast<const char*>(key.data()), key.size());
}

void patch_offset(std::string& encoded, int64_t offset) {
  put_be64(reinterpret_cast<uint8_t*>(encoded.data() + kOffsetPos), offset);
}

std::optional<RowView> decode_row(std::span<const uint8_t> e) {
  if (e.size() < kFixedSize || e[0] != kFormat) return std::nullopt;
  RowView v;
  v.offset = get_be64(e.data() + 2);
  v.timestamp = get_be64(e.data() + 10);
  size_t pos = kFixedSize;
  if (e[1] & kHasVersion) {
    if (e.size() < pos + 8) return std::nullopt;
    v.version = get_be64(e.data() + pos);
    pos += 8;
  }
  if (e[1] & kHasAppendTime) {
    if (e.size() < pos + 8) return std::nullopt;
    v.append_time = get_be64(e.data() + pos);
    pos += 8;
  }
  v.value = e.subspan(pos);
  return v;
}

}  // namespace strata::pkindex::row_format
