#include "protocol/wire/writer.h"

#include <unistd.h>

#include <bit>
#include <cassert>

namespace strata::protocol {

void Writer::write_float64(double v) { put_be(std::bit_cast<uint64_t>(v)); }

void Writer::write_string(std::string_view s) {
  if (s.size() > 0x7fff) overflowed_ = true;
  write_int16(static_cast<int16_t>(s.size()));
  write_raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

void Writer::write_nullable_string(const std::optional<std::string>& s) {
  if (!s) {
    write_int16(-1);
    return;
  }
  write_string(*s);
}

void Writer::write_compact_string(std::string_view s) {
  write_uvarint(static_cast<uint32_t>(s.size() + 1));
  write_raw(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

void Writer::write_compact_nullable_string(const std::optional<std::string>& s) {
  if (!s) {
    write_uvarint(0);
    return;
  }
  write_compact_string(*s);
}

void Writer::write_bytes(std::span<const uint8_t> b) {
  write_int32(static_cast<int32_t>(b.size()));
  write_raw(b);
}

void Writer::write_nullable_bytes(const std::optional<std::span<const uint8_t>>& b) {
  if (!b) {
    write_int32(-1);
    return;
  }
  write_bytes(*b);
}

void Writer::write_compact_bytes(std::span<const uint8_t> b) {
  write_uvarint(static_cast<uint32_t>(b.size() + 1));
  write_raw(b);
}

void Writer::write_compact_nullable_bytes(const std::optional<std::span<const uint8_t>>& b) {
  if (!b) {
    write_uvarint(0);
    return;
  }
  write_compact_bytes(*b);
}

void Writer::write_records(const Records& r, bool compact) {
  if (r.is_null) {
    if (compact) {
      write_uvarint(0);
    } else {
      write_int32(-1);
    }
    return;
  }
  uint32_t n = r.size();
  if (compact) {
    write_uvarint(n + 1);
  } else {
    write_int32(static_cast<int32_t>(n));
  }
  for (const auto& p : r.parts) {
    if (p.length == 0) continue;
    if (p.is_file()) {
      external_.emplace_back(buf_.size(), p);
      external_bytes_ += p.length;
    } else {
      write_raw(std::span<const uint8_t>(p.data, p.length));
    }
  }
}

void Writer::patch_int32(size_t pos, int32_t v) {
  assert(pos + 4 <= buf_.size());
  auto u = static_cast<uint32_t>(v);
  buf_[pos] = static_cast<uint8_t>(u >> 24);
  buf_[pos + 1] = static_cast<uint8_t>(u >> 16);
  buf_[pos + 2] = static_cast<uint8_t>(u >> 8);
  buf_[pos + 3] = static_cast<uint8_t>(u);
}

std::vector<uint8_t> flatten(const Writer& w) {
  std::vector<uint8_t> out;
  out.reserve(w.total_size());
  const auto& buf = w.buffer();
  size_t from = 0;
  for (const auto& [pos, part] : w.external()) {
    out.insert(out.end(), buf.begin() + static_cast<std::ptrdiff_t>(from),
               buf.begin() + static_cast<std::ptrdiff_t>(pos));
    from = pos;
    size_t start = out.size();
    out.resize(start + part.length);
    size_t done = 0;
    while (done < part.length) {
      ssize_t n = ::pread(part.fd, out.data() + start + done, part.length - done,
                          static_cast<off_t>(part.file_offset + done));
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
  }
  out.insert(out.end(), buf.begin() + static_cast<std::ptrdiff_t>(from), buf.end());
  return out;
}

}  // namespace strata::protocol
