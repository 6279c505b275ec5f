// Record-level timestamp search (see record_search.h), over protocol/record's RecordReader.
#include "storage/record_search.h"

#include "protocol/record/record_reader.h"

namespace strata::storage {
namespace {

constexpr size_t kMaxInflated = size_t{1} << 30;

// Returns the first record for which pred(hit) holds.
template <typename Pred>
Result<std::optional<RecordHit>> first_record(std::span<const uint8_t> batch, Pred&& pred) {
  protocol::RecordBatchView view(batch);
  auto reader = protocol::RecordReader::open(view, kMaxInflated);
  if (!reader.ok()) return reader.status();
  protocol::Record rec;
  while (true) {
    auto more = reader->next(rec);
    if (!more.ok()) return more.status();
    if (!*more) return std::optional<RecordHit>();
    RecordHit hit{reader->offset_of(rec), reader->timestamp_of(rec)};
    if (pred(hit)) return std::optional<RecordHit>(hit);
  }
}

}  // namespace

Result<std::optional<RecordHit>> find_record_at_or_after(std::span<const uint8_t> batch,
                                                         int64_t target, int64_t min_offset) {
  return first_record(
      batch, [&](const RecordHit& h) { return h.offset >= min_offset && h.timestamp >= target; });
}

Result<std::optional<RecordHit>> find_max_timestamp_record(std::span<const uint8_t> batch) {
  const int64_t max_ts = protocol::RecordBatchView(batch).max_timestamp();
  return first_record(batch, [&](const RecordHit& h) { return h.timestamp == max_ts; });
}

}  // namespace strata::storage
