// gzip through zlib.
//
// Why: Kafka's "gzip" codec is the RFC 1952 gzip container (Java uses GZIPOutputStream), so we
// write windowBits 15+16 (gzip header/trailer) at zlib's default level, as Java does. On read we
// use 15+32 (auto-detect gzip or zlib header) and accept concatenated gzip members, as Java's
// GZIPInputStream does; a stream that ends before its trailer is corruption.
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <string>

#include "protocol/codec/codec_impl.h"

namespace strata::codec::detail {
namespace {

// zlib counts in uInt; feed it at most this much per call.
constexpr size_t kMaxZChunk = std::numeric_limits<uInt>::max() / 2;

Status zlib_error(const char* what, int rc, const z_stream& zs) {
  return Status(Errc::corruption, std::string("gzip ") + what + " failed (" + std::to_string(rc) +
                                      (zs.msg ? std::string(": ") + zs.msg : std::string()) + ")");
}

}  // namespace

Status gzip_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  z_stream zs{};
  int rc = deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  if (rc != Z_OK) return Status(Errc::io_error, "gzip: deflateInit2 failed");
  const size_t base = out.size();
  size_t bound = in.size() <= kMaxZChunk ? deflateBound(&zs, static_cast<uLong>(in.size()))
                                         : in.size() + in.size() / 1000 + 1024;
  out.resize(base + bound + 64);
  size_t produced = 0;
  size_t consumed = 0;
  for (;;) {
    size_t in_now = std::min(in.size() - consumed, kMaxZChunk);
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);
    zs.avail_in = static_cast<uInt>(in_now);
    if (out.size() - base - produced < 1024) out.resize(out.size() + out.size() / 2 + 1024);
    size_t out_now = std::min(out.size() - base - produced, kMaxZChunk);
    zs.next_out = out.data() + base + produced;
    zs.avail_out = static_cast<uInt>(out_now);
    bool last = consumed + in_now == in.size();
    rc = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
    consumed += in_now - zs.avail_in;
    produced += out_now - zs.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      deflateEnd(&zs);
      out.resize(base);
      return Status(Errc::io_error, "gzip: deflate failed (" + std::to_string(rc) + ")");
    }
  }
  deflateEnd(&zs);
  out.resize(base + produced);
  return Status::Ok();
}

Status gzip_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK)
    return Status(Errc::io_error, "gzip: inflateInit2 failed");
  const size_t base = out.size();
  size_t produced = 0;
  size_t consumed = 0;
  bool in_member = true;  // an empty input is not a valid gzip stream
  Status st;
  while (true) {
    if (produced > max_out) {
      st = too_large_error(max_out);
      break;
    }
    if (out.size() - base == produced) {
      out.resize(base + produced + next_chunk_size(in.size(), produced, max_out));
    }
    size_t in_now = std::min(in.size() - consumed, kMaxZChunk);
    size_t out_now = std::min(out.size() - base - produced, kMaxZChunk);
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);
    zs.avail_in = static_cast<uInt>(in_now);
    zs.next_out = out.data() + base + produced;
    zs.avail_out = static_cast<uInt>(out_now);
    int rc = inflate(&zs, Z_NO_FLUSH);
    consumed += in_now - zs.avail_in;
    produced += out_now - zs.avail_out;
    if (rc == Z_STREAM_END) {
      in_member = false;
      if (consumed == in.size()) break;
      // Another gzip member follows (Java's GZIPInputStream reads concatenated members).
      if (inflateReset(&zs) != Z_OK) {
        st = zlib_error("inflateReset", rc, zs);
        break;
      }
      in_member = true;
      continue;
    }
    if (rc == Z_BUF_ERROR) {
      // No progress possible: either output is full (loop grows it) or input ended early.
      if (zs.avail_out == 0) continue;
      if (consumed == in.size()) {
        st = Status(Errc::corruption, "gzip: truncated stream");
        break;
      }
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      st = zlib_error("inflate", rc, zs);
      break;
    }
    if (consumed == in.size() && zs.avail_out != 0) {
      // All input consumed, output not full, stream not ended: truncated.
      st = Status(Errc::corruption, "gzip: truncated stream");
      break;
    }
  }
  inflateEnd(&zs);
  if (st.ok() && in_member) st = Status(Errc::corruption, "gzip: truncated stream");
  if (st.ok() && produced > max_out) st = too_large_error(max_out);
  out.resize(base + std::min(produced, max_out));
  return st;
}

}  // namespace strata::codec::detail
