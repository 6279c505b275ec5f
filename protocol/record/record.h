// Record and Header: zero-copy views of one record (and its headers) inside a RecordBatch v2.
//
// Produced by RecordReader (protocol/record/record_reader.h); every span/string_view points into
// the batch bytes or the reader's decompression buffer and is valid until the reader is reset or
// destroyed (and the batch bytes are alive). Header is also the input type of
// RecordBatchBuilder::add. Value types; thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace strata::protocol {

struct Header {
  std::string_view key;
  std::optional<std::span<const uint8_t>> value;  // nullopt = null header value
};

// Iterates the headers of one record. Constructed from Record::headers_raw/header_count, whose
// bytes RecordReader has already validated; on bytes that were not validated it stops (returns
// false) at the first malformed header.
class HeaderIterator {
 public:
  HeaderIterator() = default;
  HeaderIterator(std::span<const uint8_t> raw, int32_t count) : raw_(raw), remaining_(count) {}

  // Fills `out` with the next header; false when none are left.
  bool next(Header& out);
  int32_t remaining() const { return remaining_; }

 private:
  std::span<const uint8_t> raw_;
  size_t pos_ = 0;
  int32_t remaining_ = 0;
};

struct Record {
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;                    // relative to the batch's baseTimestamp
  int32_t offset_delta = 0;                       // relative to the batch's baseOffset
  std::optional<std::span<const uint8_t>> key;    // nullopt = null key
  std::optional<std::span<const uint8_t>> value;  // nullopt = null value (tombstone)
  int32_t header_count = 0;
  std::span<const uint8_t> headers_raw;  // the encoded headers, after the count

  HeaderIterator headers() const { return HeaderIterator(headers_raw, header_count); }
};

namespace detail {

// Decodes one header at raw[pos]; advances pos. False on a malformed header (negative key
// length, value length < -1, lengths past the end, bad varints).
bool decode_header(std::span<const uint8_t> raw, size_t& pos, Header& out);

}  // namespace detail
}  // namespace strata::protocol
