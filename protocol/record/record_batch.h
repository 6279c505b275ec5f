// RecordBatchView: a zero-copy, read-only view of one RecordBatch v2 (layout in
// protocol/record/batch_format.h), plus in-place edits the broker and storage make to a batch
// they own (offset assignment, leader-epoch stamping, LogAppendTime).
//
// The view does not own the bytes; the caller keeps them alive. Header accessors require
// size_bytes() >= batch_format::kHeaderSize (i.e. validate() != BatchCheck::too_short); call
// validate() on untrusted input first. Views are value types: any thread may read a view whose
// bytes are not being modified concurrently. The mutating free functions need exclusive access
// to the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "protocol/codec/compression.h"
#include "protocol/record/batch_format.h"

namespace strata::protocol {

enum class TimestampType : int8_t { create_time = 0, log_append_time = 1 };

enum class BatchCheck {
  ok,
  too_short,         // fewer than the 61 header bytes
  bad_length,        // batchLength + 12 != span size, or smaller than the header
  bad_magic,         // magic != 2
  bad_crc,           // CRC-32C over [attributes, end) does not match
  bad_record_count,  // recordCount < 0
};

std::string_view batch_check_name(BatchCheck c);

class RecordBatchView {
 public:
  RecordBatchView() = default;
  explicit RecordBatchView(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  // Checks, in order: size >= header, batchLength consistent with the span, magic, record count,
  // then CRC. Does not look inside the records (RecordReader does).
  BatchCheck validate() const;
  // The CRC-32C the header fields and records actually hash to.
  uint32_t compute_crc() const;

  int64_t base_offset() const;
  int32_t batch_length() const;
  int32_t partition_leader_epoch() const;
  int8_t magic() const;
  uint32_t crc() const;
  int16_t attributes() const;
  int32_t last_offset_delta() const;
  int64_t base_timestamp() const;
  int64_t max_timestamp() const;
  int64_t producer_id() const;
  int16_t producer_epoch() const;
  int32_t base_sequence() const;
  int32_t record_count() const;

  // base_offset() + last_offset_delta(): the offset of the last record.
  int64_t last_offset() const { return base_offset() + last_offset_delta(); }
  // The offset after this batch.
  int64_t next_offset() const { return last_offset() + 1; }

  // Raw codec id from attribute bits 0-2; may be > 4 for a hostile batch (see
  // codec::is_known_compression).
  codec::Compression compression() const;
  TimestampType timestamp_type() const;
  bool is_transactional() const;
  bool is_control() const;
  bool has_delete_horizon() const;

  size_t size_bytes() const { return bytes_.size(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  // Bytes after the 61-byte header: the records, compressed when compression() != none.
  std::span<const uint8_t> records_payload() const;

 private:
  std::span<const uint8_t> bytes_;
};

// Total size (batchLength + 12) of the batch that starts at the front of `buffer`, or 0 when
// `buffer` is shorter than the 61-byte header or batchLength is negative. The result may exceed
// buffer.size() (a partial batch). Used to split a records buffer holding several batches.
size_t peek_batch_size(std::span<const uint8_t> buffer);

// In-place edits of a batch (the span must be the whole batch, >= 61 bytes).
// Fields outside the CRC: no CRC update.
void set_base_offset(std::span<uint8_t> batch, int64_t base_offset);
void set_partition_leader_epoch(std::span<uint8_t> batch, int32_t epoch);
// Marks the batch LogAppendTime (attribute bit 3), sets maxTimestamp = ts, recomputes the CRC.
void set_log_append_time(std::span<uint8_t> batch, int64_t ts);
// Recomputes and stores the CRC-32C over [attributes, end).
void update_crc(std::span<uint8_t> batch);

}  // namespace strata::protocol
