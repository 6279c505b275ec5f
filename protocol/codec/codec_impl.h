// Internal entry points of the individual codecs, dispatched by protocol/codec/compression.cc.
// Not for use outside protocol/codec/. Owned by the codec work; stateless, any thread.
// Every function appends to `out` and follows the contract of compress()/decompress() in
// protocol/codec/compression.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "protocol/base/result.h"

namespace strata::codec::detail {

Status gzip_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out);
Status gzip_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out);

Status snappy_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out);
Status snappy_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out);

Status lz4_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out);
Status lz4_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out);

Status zstd_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out);
Status zstd_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out);

// Growth policy for streaming decoders: how many more bytes to make room for, given the input
// size, what has been produced so far and the limit. Returns at least 1 while `produced <=
// max_out`, and makes room for one byte past the limit so that overflow can be detected.
size_t next_chunk_size(size_t input_size, size_t produced, size_t max_out);

Status too_large_error(size_t max_out);

}  // namespace strata::codec::detail
