#include "broker/topics/batch_validation.h"

#include "protocol/codec/compression.h"
#include "protocol/record/batch_format.h"
#include "protocol/record/byte_order.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"

namespace strata::broker {

namespace p = strata::protocol;
namespace bf = strata::protocol::batch_format;
using p::ErrorCode;

namespace {

PreparedBatch reject(ErrorCode e, std::string message) {
  PreparedBatch b;
  b.error = e;
  b.message = std::move(message);
  return b;
}

std::optional<codec::Compression> target_codec(StoredCompression c) {
  switch (c) {
    case StoredCompression::producer:
      return std::nullopt;
    case StoredCompression::none:
      return codec::Compression::none;
    case StoredCompression::gzip:
      return codec::Compression::gzip;
    case StoredCompression::snappy:
      return codec::Compression::snappy;
    case StoredCompression::lz4:
      return codec::Compression::lz4;
    case StoredCompression::zstd:
      return codec::Compression::zstd;
  }
  return std::nullopt;
}

// The same batch with its records re-encoded by `codec` (header fields kept; CRC recomputed).
Status recompress(const p::RecordBatchView& view, std::span<const uint8_t> records,
                  codec::Compression codec, std::vector<uint8_t>& out) {
  out.assign(view.bytes().begin(), view.bytes().begin() + bf::kHeaderSize);
  if (codec == codec::Compression::none) {
    out.insert(out.end(), records.begin(), records.end());
  } else {
    STRATA_RETURN_IF_ERROR(codec::compress(codec, records, out));
  }
  int16_t attrs = static_cast<int16_t>((view.attributes() & ~bf::kCompressionMask) |
                                       static_cast<int16_t>(codec));
  p::detail::store_be<int16_t>(out.data() + bf::kAttributesOffset, attrs);
  p::detail::store_be<int32_t>(out.data() + bf::kBatchLengthOffset,
                               static_cast<int32_t>(out.size() - bf::kLogOverhead));
  p::update_crc(out);
  return Status::Ok();
}

}  // namespace

PreparedBatch prepare_batch(std::span<uint8_t> records, const TopicConfig& topic,
                            int16_t produce_version, int64_t now_ms) {
  if (records.empty()) return reject(ErrorCode::invalid_record, "empty record set");
  if (records.size() <= bf::kMagicOffset) {
    return reject(ErrorCode::corrupt_message, "record set is shorter than a batch header");
  }
  int8_t magic = static_cast<int8_t>(records[bf::kMagicOffset]);
  if (magic != bf::kMagicV2) {
    return reject(ErrorCode::invalid_record,
                  "message format v" + std::to_string(magic) + " is not supported; use v2");
  }
  size_t size = p::peek_batch_size(records);
  if (size == 0 || size > records.size()) {
    return reject(ErrorCode::corrupt_message, "record batch is truncated");
  }
  if (size < records.size()) {
    return reject(ErrorCode::invalid_record, "exactly one record batch per partition is allowed");
  }
  if (static_cast<int64_t>(size) > topic.max_message_bytes) {
    return reject(ErrorCode::message_too_large, "batch of " + std::to_string(size) +
                                                    " bytes exceeds max.message.bytes " +
                                                    std::to_string(topic.max_message_bytes));
  }
  p::RecordBatchView view(records);
  switch (view.validate()) {
    case p::BatchCheck::ok:
      break;
    case p::BatchCheck::bad_crc:
      return reject(ErrorCode::corrupt_message, "record batch CRC-32C mismatch");
    case p::BatchCheck::bad_record_count:
      return reject(ErrorCode::invalid_record, "negative record count");
    default:
      return reject(ErrorCode::corrupt_message, "malformed record batch header");
  }
  int codec_id = view.attributes() & bf::kCompressionMask;
  if (!codec::is_known_compression(codec_id)) {
    return reject(ErrorCode::unsupported_compression_type,
                  "unknown compression codec " + std::to_string(codec_id));
  }
  if (view.compression() == codec::Compression::zstd && produce_version < 7) {
    return reject(ErrorCode::unsupported_compression_type, "zstd needs Produce v7 or later");
  }
  if (view.is_control())
    return reject(ErrorCode::invalid_record, "clients may not send control batches");
  if (view.record_count() == 0) return reject(ErrorCode::invalid_record, "batch has no records");
  if (view.last_offset_delta() != view.record_count() - 1) {
    return reject(ErrorCode::invalid_record, "lastOffsetDelta does not match the record count");
  }

  // Walk the records: offsets must be 0..n-1 and every length must fit (a consumer must never be
  // handed a batch it cannot parse). Compressed batches are decompressed, as Kafka does.
  auto reader = p::RecordReader::open(view);
  if (!reader.ok()) {
    return reject(reader.status().code() == Errc::unsupported
                      ? ErrorCode::unsupported_compression_type
                      : ErrorCode::corrupt_message,
                  reader.status().message());
  }
  p::Record rec;
  int32_t expected = 0;
  for (;;) {
    auto more = reader->next(rec);
    // Java's record parser throws InvalidRecordException here ("Found invalid record structure").
    if (!more.ok()) return reject(ErrorCode::invalid_record, more.status().message());
    if (!*more) break;
    if (rec.offset_delta != expected) {
      return reject(ErrorCode::invalid_record, "record offset delta " +
                                                   std::to_string(rec.offset_delta) + " where " +
                                                   std::to_string(expected) + " was expected");
    }
    ++expected;
    if (topic.compact && !rec.key) {  // Kafka's LogValidator rule for compacted topics
      return reject(ErrorCode::invalid_record, "Compacted topic cannot accept message without key");
    }
  }

  PreparedBatch out;
  out.record_count = view.record_count();
  out.batch = records;
  auto target = target_codec(topic.compression);
  if (target && *target != view.compression()) {
    Status st = recompress(view, reader->records_data(), *target, out.owned);
    if (!st.ok()) return reject(ErrorCode::corrupt_message, st.message());
    out.batch = out.owned;
    if (static_cast<int64_t>(out.owned.size()) > topic.max_message_bytes) {
      return reject(ErrorCode::message_too_large,
                    "batch of " + std::to_string(out.owned.size()) +
                        " bytes after recompression exceeds max.message.bytes");
    }
  }
  // LogValidator: a batch with a producer id needs a sequence number.
  if (view.producer_id() >= 0 && view.base_sequence() < 0) {
    return reject(ErrorCode::invalid_record, "idempotent batch with a negative base sequence");
  }
  if (topic.log_append_time) {
    p::set_log_append_time(out.batch, now_ms);
    out.log_append_time = now_ms;
  }
  return out;
}

}  // namespace strata::broker
