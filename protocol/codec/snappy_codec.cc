// snappy through libsnappy.
//
// Why: Kafka's Java client (snappy-java's SnappyOutputStream) and librdkafka write the xerial
// framing - an 8-byte magic (0x82 "SNAPPY" 0x00), two big-endian int32 versions, then repeated
// [int32 BE compressed length][raw snappy block] - so we write the same framing, in 32 KiB
// blocks like snappy-java, which every client reads. Some clients (older librdkafka, KafkaJS
// codecs, kafka-python with xerial disabled) write a single raw snappy block, so on read we accept
// both: xerial framing when the magic is present, raw snappy otherwise.
#include <snappy.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

#include "protocol/codec/codec_impl.h"

namespace strata::codec::detail {
namespace {

constexpr std::array<uint8_t, 8> kXerialMagic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t kXerialHeaderSize = 16;  // magic + int32 version + int32 compatible version
constexpr int32_t kXerialVersion = 1;
constexpr int32_t kXerialCompatibleVersion = 1;
constexpr size_t kXerialBlockSize = 32 * 1024;

void put_be32(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  out[at] = static_cast<uint8_t>(v >> 24);
  out[at + 1] = static_cast<uint8_t>(v >> 16);
  out[at + 2] = static_cast<uint8_t>(v >> 8);
  out[at + 3] = static_cast<uint8_t>(v);
}

uint32_t get_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

bool has_xerial_magic(std::span<const uint8_t> in) {
  return in.size() >= kXerialHeaderSize &&
         std::memcmp(in.data(), kXerialMagic.data(), kXerialMagic.size()) == 0;
}

// Decodes one raw snappy block and appends it, keeping the total appended <= max_out.
Status raw_block(std::span<const uint8_t> block, std::vector<uint8_t>& out, size_t base,
                 size_t max_out) {
  const char* src = reinterpret_cast<const char*>(block.data());
  size_t n = 0;
  if (!snappy::GetUncompressedLength(src, block.size(), &n)) {
    return Status(Errc::corruption, "snappy: bad block header");
  }
  if (n > max_out - (out.size() - base)) return too_large_error(max_out);
  size_t at = out.size();
  out.resize(at + n);
  if (!snappy::RawUncompress(src, block.size(), reinterpret_cast<char*>(out.data() + at))) {
    out.resize(at);
    return Status(Errc::corruption, "snappy: corrupt block");
  }
  return Status::Ok();
}

}  // namespace

Status snappy_compress(std::span<const uint8_t> in, std::vector<uint8_t>& out) {
  size_t at = out.size();
  out.resize(at + kXerialHeaderSize);
  std::memcpy(out.data() + at, kXerialMagic.data(), kXerialMagic.size());
  put_be32(out, at + 8, kXerialVersion);
  put_be32(out, at + 12, kXerialCompatibleVersion);
  for (size_t pos = 0; pos < in.size(); pos += kXerialBlockSize) {
    size_t len = std::min(kXerialBlockSize, in.size() - pos);
    size_t block_at = out.size();
    out.resize(block_at + 4 + snappy::MaxCompressedLength(len));
    size_t written = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(in.data() + pos), len,
                        reinterpret_cast<char*>(out.data() + block_at + 4), &written);
    put_be32(out, block_at, static_cast<uint32_t>(written));
    out.resize(block_at + 4 + written);
  }
  return Status::Ok();
}

Status snappy_decompress(std::span<const uint8_t> in, std::vector<uint8_t>& out, size_t max_out) {
  const size_t base = out.size();
  if (!has_xerial_magic(in)) return raw_block(in, out, base, max_out);
  // xerial framing: the versions are informational (snappy-java writes 1/1); skip them.
  size_t pos = kXerialHeaderSize;
  while (pos < in.size()) {
    if (in.size() - pos < 4)
      return Status(Errc::corruption, "snappy: truncated xerial block length");
    uint32_t len = get_be32(in.data() + pos);
    pos += 4;
    if (len > in.size() - pos) return Status(Errc::corruption, "snappy: truncated xerial block");
    STRATA_RETURN_IF_ERROR(raw_block(in.subspan(pos, len), out, base, max_out));
    pos += len;
  }
  return Status::Ok();
}

}  // namespace strata::codec::detail
