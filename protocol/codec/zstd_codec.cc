// zstd through libzstd.
//
// Why: Kafka's zstd codec is plain zstd frames (Java uses zstd-jni's ZstdOutputStream, which does
// not record the content size), so decompression must stream rather than rely on
// ZSTD_getFrameContentSize. We write single frames with ZSTD_compress at level 3, Kafka's default.
// The decoder's window is capped (windowLogMax 27 = 128 MiB, libzstd's own default limit) so a
// hostile frame cannot demand a huge window.
#include <zstd.h>

#include <memory>
#include <string>

#include "protocol/codec/codec_impl.h"

namespace strata::codec::detail {
namespace {

constexpr int kLevel = 3;

struct DctxDeleter {
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

}  // namespace

Status zstd_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  size_t at = out.size();
  out.resize(at + ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data() + at, out.size() - at, in.data(), in.size(), kLevel);
  if (ZSTD_isError(n)) {
    out.resize(at);
    return Status(Errc::io_error, std::string("zstd: compress failed: ") + ZSTD_getErrorName(n));
  }
  out.resize(at + n);
  return Status::Ok();
}

Status zstd_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out) {
  std::unique_ptr<ZSTD_DCtx, DctxDeleter> dctx(ZSTD_createDCtx());
  if (!dctx) return Status(Errc::io_error, "zstd: cannot create decompression context");
  ZSTD_DCtx_setParameter(dctx.get(), ZSTD_d_windowLogMax, 27);

  const size_t base = out.size();
  size_t produced = 0;
  ZSTD_inBuffer input{in.data(), in.size(), 0};
  size_t hint = 1;  // non-zero: a frame is expected (empty input is not a frame)
  while (input.pos < input.size || hint != 0) {
    if (produced > max_out) break;
    if (out.size() - base == produced) {
      out.resize(base + produced + next_chunk_size(in.size(), produced, max_out));
    }
    ZSTD_outBuffer output{out.data() + base + produced, out.size() - base - produced, 0};
    size_t in_before = input.pos;
    hint = ZSTD_decompressStream(dctx.get(), &output, &input);
    if (ZSTD_isError(hint)) {
      out.resize(base + produced);
      return Status(Errc::corruption,
                    std::string("zstd: decompress failed: ") + ZSTD_getErrorName(hint));
    }
    produced += output.pos;
    // hint == 0: a frame ended; further input (if any) must be another frame.
    if (hint != 0 && input.pos == input.size && input.pos == in_before && output.pos == 0 &&
        output.size > 0) {
      out.resize(base + produced);
      return Status(Errc::corruption, "zstd: truncated frame");
    }
  }
  out.resize(base + std::min(produced, max_out));
  if (produced > max_out) return too_large_error(max_out);
  return Status::Ok();
}

}  // namespace strata::codec::detail
