// Compression codecs for Kafka record batches: gzip, snappy, lz4, zstd.
//
// The codec is chosen by bits 0-2 of a RecordBatch v2 attributes field (see
// protocol/record/batch_format.h). Payload formats follow what Kafka clients write and accept:
//   gzip   - RFC 1952 gzip members (zlib)
//   snappy - xerial/snappy-java framing on write; raw snappy or xerial framing on read
//   lz4    - standard LZ4 frame format (lz4frame); independent blocks on write
//   zstd   - standard zstd frames; streaming decode (frames may lack a content size)
// Owned by: the protocol module (codec work). Stateless free functions: any thread may call them
// concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"

namespace strata::codec {

enum class Compression : int8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

// Highest codec id defined by Kafka; attribute values above it are invalid.
inline constexpr int kMaxCompressionId = 4;

// True when `id` (the 3 low attribute bits) names a codec this module implements.
constexpr bool is_known_compression(int id) { return id >= 0 && id <= kMaxCompressionId; }

// Kafka's name for the codec ("none", "gzip", "snappy", "lz4", "zstd"); "unknown" otherwise.
std::string_view compression_name(Compression c);

// Compresses `in` and APPENDS the compressed bytes to `out` (existing contents are kept).
// Compression::none appends `in` unchanged. Errors only on library failure or unknown codec.
Status compress(Compression c, std::span<const uint8_t> in, std::vector<uint8_t>& out);

// Decompresses `in` and APPENDS the result to `out`. At most `max_out` bytes are appended: a
// payload that would expand beyond it fails with Errc::too_large (decompression-bomb guard), and
// `out` may then hold a partial result. Malformed or truncated input fails with Errc::corruption;
// an unknown codec with Errc::unsupported. Never reads outside `in`.
Status decompress(Compression c, std::span<const uint8_t> in, std::vector<uint8_t>& out,
                  size_t max_out);

}  // namespace strata::codec
