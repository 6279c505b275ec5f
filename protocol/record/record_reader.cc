// RecordReader (see record_reader.h).
#include "protocol/record/record_reader.h"

#include <string>
#include <utility>

#include "protocol/record/varint.h"

namespace strata::protocol {

Result<RecordReader> RecordReader::open(const RecordBatchView& batch,
                                        size_t max_decompressed_bytes) {
  RecordReader reader;
  Status st = reader.reset(batch, max_decompressed_bytes);
  if (!st.ok()) return st;
  return reader;
}

Status RecordReader::reset(const RecordBatchView& batch, size_t max_decompressed_bytes) {
  batch_ = batch;
  buffer_.clear();
  data_ = {};
  pos_ = 0;
  read_ = 0;
  expected_ = 0;
  failed_ = true;
  if (batch.size_bytes() < batch_format::kHeaderSize) {
    return Status(Errc::corruption, "record batch shorter than its header");
  }
  expected_ = batch.record_count();
  if (expected_ < 0) return Status(Errc::corruption, "negative record count");
  auto codec_id = static_cast<int>(batch.compression());
  if (!codec::is_known_compression(codec_id)) {
    return Status(Errc::unsupported, "unknown compression codec " + std::to_string(codec_id));
  }
  if (batch.compression() == codec::Compression::none) {
    data_ = batch.records_payload();
  } else {
    STRATA_RETURN_IF_ERROR(codec::decompress(batch.compression(), batch.records_payload(), buffer_,
                                             max_decompressed_bytes));
    data_ = buffer_;
  }
  failed_ = false;
  return Status::Ok();
}

Status RecordReader::fail(std::string message) {
  failed_ = true;
  return Status(Errc::corruption, "record " + std::to_string(read_) + ": " + message);
}

int64_t RecordReader::timestamp_of(const Record& r) const {
  if (batch_.timestamp_type() == TimestampType::log_append_time) return batch_.max_timestamp();
  return batch_.base_timestamp() + r.timestamp_delta;
}

Result<bool> RecordReader::next(Record& out) {
  using detail::read_varint;
  using detail::read_varlong;
  if (failed_) return Status(Errc::corruption, "record reader is not readable");
  if (read_ == expected_) {
    if (pos_ != data_.size()) {
      return fail(std::to_string(data_.size() - pos_) + " trailing bytes after the last record");
    }
    return false;
  }
  if (pos_ >= data_.size()) {
    return fail("batch ends after " + std::to_string(read_) + " of " + std::to_string(expected_) +
                " records");
  }
  int32_t length = 0;
  if (!read_varint(data_, pos_, length)) return fail("bad record length varint");
  if (length < 0 || static_cast<size_t>(length) > data_.size() - pos_) {
    return fail("record length " + std::to_string(length) + " out of bounds");
  }
  std::span<const uint8_t> rec = data_.subspan(pos_, static_cast<size_t>(length));
  size_t p = 0;
  if (rec.empty()) return fail("empty record");
  out.attributes = static_cast<int8_t>(rec[p++]);
  if (!read_varlong(rec, p, out.timestamp_delta)) return fail("bad timestamp delta");
  if (!read_varint(rec, p, out.offset_delta)) return fail("bad offset delta");

  int32_t key_len = 0;
  if (!read_varint(rec, p, key_len)) return fail("bad key length");
  if (key_len < -1 || (key_len >= 0 && static_cast<size_t>(key_len) > rec.size() - p)) {
    return fail("key length " + std::to_string(key_len) + " out of bounds");
  }
  if (key_len == -1) {
    out.key.reset();
  } else {
    out.key = rec.subspan(p, static_cast<size_t>(key_len));
    p += static_cast<size_t>(key_len);
  }

  int32_t value_len = 0;
  if (!read_varint(rec, p, value_len)) return fail("bad value length");
  if (value_len < -1 || (value_len >= 0 && static_cast<size_t>(value_len) > rec.size() - p)) {
    return fail("value length " + std::to_string(value_len) + " out of bounds");
  }
  if (value_len == -1) {
    out.value.reset();
  } else {
    out.value = rec.subspan(p, static_cast<size_t>(value_len));
    p += static_cast<size_t>(value_len);
  }

  if (!read_varint(rec, p, out.header_count)) return fail("bad header count");
  if (out.header_count < 0) return fail("negative header count");
  size_t headers_start = p;
  Header h;
  for (int32_t i = 0; i < out.header_count; ++i) {
    if (!detail::decode_header(rec, p, h)) return fail("malformed header " + std::to_string(i));
  }
  out.headers_raw = rec.subspan(headers_start, p - headers_start);
  if (p != rec.size()) {
    return fail("record length " + std::to_string(length) + " but fields end at " +
                std::to_string(p));
  }
  pos_ += static_cast<size_t>(length);
  ++read_;
  return true;
}

}  // namespace strata::protocol
