// lz4 through liblz4's frame API (lz4frame.h).
//
// Why: since record batch v2 (KIP-57 fixed the header checksum) Kafka uses the standard LZ4 frame
// format. Java's reader (KafkaLZ4BlockInputStream) rejects frames whose blocks are linked, so we
// write block-independent frames with 64 KiB blocks (Java's default), no content size and no
// content checksum - the subset every client reads. On read, LZ4F_decompress handles any valid
// frame (linked blocks, content size, checksums, several concatenated frames), which covers
// kafka-python and librdkafka output.
#include <lz4frame.h>

#include <memory>
#include <string>

#include "protocol/codec/codec_impl.h"

namespace strata::codec::detail {
namespace {

struct CctxDeleter {
  void operator()(LZ4F_cctx* c) const { LZ4F_freeCompressionContext(c); }
};
struct DctxDeleter {
  void operator()(LZ4F_dctx* d) const { LZ4F_freeDecompressionContext(d); }
};

Status lz4_error(const char* what, size_t code) {
  return Status(Errc::corruption, std::string("lz4: ") + what + ": " + LZ4F_getErrorName(code));
}

}  // namespace

Status lz4_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  prefs.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
  prefs.frameInfo.contentSize = 0;  // not recorded
  prefs.compressionLevel = 0;       // lz4 fast (default)
  size_t at = out.size();
  out.resize(at + LZ4F_compressFrameBound(in.size(), &prefs));
  size_t n = LZ4F_compressFrame(out.data() + at, out.size() - at, in.data(), in.size(), &prefs);
  if (LZ4F_isError(n)) {
    out.resize(at);
    return Status(Errc::io_error, std::string("lz4: compress failed: ") + LZ4F_getErrorName(n));
  }
  out.resize(at + n);
  return Status::Ok();
}

Status lz4_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out) {
  LZ4F_dctx* raw = nullptr;
  size_t rc = LZ4F_createDecompressionContext(&raw, LZ4F_VERSION);
  if (LZ4F_isError(rc)) return Status(Errc::io_error, "lz4: cannot create decompression context");
  std::unique_ptr<LZ4F_dctx, DctxDeleter> dctx(raw);

  const size_t base = out.size();
  size_t produced = 0;
  size_t consumed = 0;
  size_t hint = 1;  // non-zero: a frame is expected (empty input is not a frame)
  while (consumed < in.size() || hint != 0) {
    if (produced > max_out) break;
    if (out.size() - base == produced) {
      out.resize(base + produced + next_chunk_size(in.size(), produced, max_out));
    }
    size_t src_size = in.size() - consumed;
    size_t dst_size = out.size() - base - produced;
    hint = LZ4F_decompress(dctx.get(), out.data() + base + produced, &dst_size,
                           in.data() + consumed, &src_size, nullptr);
    if (LZ4F_isError(hint)) {
      out.resize(base + produced);
      return lz4_error("decompress", hint);
    }
    consumed += src_size;
    produced += dst_size;
    // hint == 0: a frame ended; further input (if any) must be another frame.
    if (src_size == 0 && dst_size == 0 && consumed == in.size() && hint != 0) {
      out.resize(base + produced);
      return Status(Errc::corruption, "lz4: truncated frame");
    }
  }
  out.resize(base + std::min(produced, max_out));
  if (produced > max_out) return too_large_error(max_out);
  return Status::Ok();
}

}  // namespace strata::codec::detail
