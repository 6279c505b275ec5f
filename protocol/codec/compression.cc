// Codec dispatch (see compression.h).
#include "protocol/codec/compression.h"

#include <algorithm>
#include <limits>
#include <string>

#include "protocol/codec/codec_impl.h"

namespace strata::codec {

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::none:
      return "none";
    case Compression::gzip:
      return "gzip";
    case Compression::snappy:
      return "snappy";
    case Compression::lz4:
      return "lz4";
    case Compression::zstd:
      return "zstd";
  }
  return "unknown";
}

Status compress(Compression c, std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  switch (c) {
    case Compression::none:
      out.insert(out.end(), in.begin(), in.end());
      return Status::Ok();
    case Compression::gzip:
      return detail::gzip_compress(in, out);
    case Compression::snappy:
      return detail::snappy_compress(in, out);
    case Compression::lz4:
      return detail::lz4_compress(in, out);
    case Compression::zstd:
      return detail::zstd_compress(in, out);
  }
  return Status(Errc::unsupported,
                "unknown compression codec " + std::to_string(static_cast<int>(c)));
}

Status decompress(Compression c, std::span<const uint8_t> in, std::vector<uint8_t>& out,
                  size_t max_out) {
  switch (c) {
    case Compression::none:
      if (in.size() > max_out) return detail::too_large_error(max_out);
      out.insert(out.end(), in.begin(), in.end());
      return Status::Ok();
    case Compression::gzip:
      return detail::gzip_decompress(in, out, max_out);
    case Compression::snappy:
      return detail::snappy_decompress(in, out, max_out);
    case Compression::lz4:
      return detail::lz4_decompress(in, out, max_out);
    case Compression::zstd:
      return detail::zstd_decompress(in, out, max_out);
  }
  return Status(Errc::unsupported,
                "unknown compression codec " + std::to_string(static_cast<int>(c)));
}

namespace detail {

size_t next_chunk_size(size_t input_size, size_t produced, size_t max_out) {
  // Start near a typical compression ratio, then double what we have, never past max_out + 1.
  constexpr size_t kMinChunk = 64 * 1024;
  size_t want = std::max({kMinChunk, input_size * 4, produced});
  size_t room = max_out - produced;  // caller guarantees produced <= max_out
  if (room == std::numeric_limits<size_t>::max()) return want;
  return std::min(want, room + 1);
}

Status too_large_error(size_t max_out) {
  return Status(Errc::too_large,
                "decompressed size exceeds the limit of " + std::to_string(max_out) + " bytes");
}

}  // namespace detail
}  // namespace strata::codec
