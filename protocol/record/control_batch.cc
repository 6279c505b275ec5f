#include "protocol/record/control_batch.h"

#include "protocol/record/batch_builder.h"
#include "protocol/record/batch_format.h"
#include "protocol/record/byte_order.h"
#include "protocol/record/varint.h"

namespace strata::protocol {

namespace bf = batch_format;

std::optional<Marker> parse_marker(std::span<const uint8_t> batch) {
  size_t pos = bf::kHeaderSize;
  int32_t length = 0;
  int32_t offset_delta = 0;
  int32_t key_length = 0;
  int32_t value_length = 0;
  int64_t timestamp_delta = 0;
  if (!detail::read_varint(batch, pos, length) || pos + 1 > batch.size()) return std::nullopt;
  ++pos;  // record attributes
  if (!detail::read_varlong(batch, pos, timestamp_delta) ||
      !detail::read_varint(batch, pos, offset_delta) ||
      !detail::read_varint(batch, pos, key_length) || key_length < 4 ||
      pos + static_cast<size_t>(key_length) > batch.size()) {
    return std::nullopt;
  }
  const auto type = detail::load_be<int16_t>(batch.data() + pos + 2);
  if (type != kControlCommit && type != kControlAbort) return std::nullopt;
  Marker m;
  m.commit = type == kControlCommit;
  pos += static_cast<size_t>(key_length);
  // The value: version + coordinator epoch (absent or short: -1, as Kafka reads nothing there).
  if (detail::read_varint(batch, pos, value_length) && value_length >= 6 &&
      pos + 6 <= batch.size()) {
    m.coordinator_epoch = detail::load_be<int32_t>(batch.data() + pos + 2);
  }
  return m;
}

std::optional<bool> marker_type(std::span<const uint8_t> batch) {
  auto m = parse_marker(batch);
  if (!m) return std::nullopt;
  return m->commit;
}

std::vector<uint8_t> build_marker(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                                  bool commit, int64_t timestamp_ms) {
  uint8_t key[4];
  detail::store_be<int16_t>(key, 0);
  detail::store_be<int16_t>(key + 2, commit ? kControlCommit : kControlAbort);
  uint8_t value[6];
  detail::store_be<int16_t>(value, 0);
  detail::store_be<int32_t>(value + 2, coordinator_epoch);
  RecordBatchBuilder builder;
  builder.set_producer(producer_id, epoch, bf::kNoSequence)
      .set_transactional(true)
      .set_control(true);
  builder.add(timestamp_ms, std::span<const uint8_t>(key), std::span<const uint8_t>(value));
  return builder.build();
}

}  // namespace strata::protocol
