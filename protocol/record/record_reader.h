// RecordReader: iterates the records of one RecordBatch v2, decompressing the payload first
// when the batch is compressed.
//
// Every Record it yields is a view into the batch bytes (uncompressed batches) or into the
// reader's own buffer (compressed ones), valid until the next reset() or destruction; no
// allocation happens per record, and the buffer is reused across reset() calls. Malformed
// records (bad varints, lengths past the end, record-length mismatch, a record count that does
// not match the bytes, trailing bytes) are reported as Errc::corruption; after an error next()
// keeps failing. A reader is owned by one thread at a time; it is movable, not copyable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/record/record.h"
#include "protocol/record/record_batch.h"

namespace strata::protocol {

class RecordReader {
 public:
  // Default limit on the decompressed size of one batch.
  static constexpr size_t kDefaultMaxDecompressedBytes = 64u << 20;

  RecordReader() = default;
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;
  RecordReader(RecordReader&&) noexcept = default;
  RecordReader& operator=(RecordReader&&) noexcept = default;

  // Opens a reader over `batch` (which must outlive it). `max_decompressed_bytes` bounds the
  // decompressed records of a compressed batch (uncompressed batches are read in place and need
  // no limit). Fails with Errc::corruption on a batch shorter than its header or with a negative
  // record count, Errc::unsupported on an unknown codec, and Errc::too_large/corruption from
  // decompression. Does not check the CRC: call RecordBatchView::validate() for that.
  static Result<RecordReader> open(const RecordBatchView& batch,
                                   size_t max_decompressed_bytes = kDefaultMaxDecompressedBytes);

  // Re-targets this reader at another batch, reusing its buffer. Same errors as open().
  Status reset(const RecordBatchView& batch,
               size_t max_decompressed_bytes = kDefaultMaxDecompressedBytes);

  // Reads the next record into `out`: true on a record, false at the (well-formed) end.
  Result<bool> next(Record& out);

  const RecordBatchView& batch() const { return batch_; }
  int32_t records_read() const { return read_; }
  // The uncompressed records bytes being iterated.
  std::span<const uint8_t> records_data() const { return data_; }

  // Absolute offset of a record of this batch.
  int64_t offset_of(const Record& r) const { return batch_.base_offset() + r.offset_delta; }
  // Record timestamp as Kafka defines it: maxTimestamp for a LogAppendTime batch, otherwise
  // baseTimestamp + timestampDelta.
  int64_t timestamp_of(const Record& r) const;

 private:
  Status fail(std::string message);

  RecordBatchView batch_;
  std::vector<uint8_t> buffer_;  // decompressed records (compressed batches only)
  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  int32_t expected_ = 0;
  int32_t read_ = 0;
  bool failed_ = true;  // a default-constructed reader has nothing to read
};

}  // namespace strata::protocol
