// Transaction markers (Kafka's EndTransactionMarker control batches): the record layout every
// layer reads the same way. Key = version int16 (0) + type int16 (0 = ABORT, 1 = COMMIT); value =
// version int16 (0) + coordinator epoch int32. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace strata::protocol {

inline constexpr int16_t kControlAbort = 0;
inline constexpr int16_t kControlCommit = 1;

// The type of a control batch's first record: true = COMMIT, false = ABORT, nullopt for anything
// else (other control types, a truncated record), which readers ignore as Kafka does. `batch` is
// the whole, uncompressed control batch (control batches are never compressed).
std::optional<bool> marker_type(std::span<const uint8_t> batch);

// A COMMIT/ABORT marker's type and the coordinator epoch in its value (-1 when the value is too
// short to hold one); nullopt as for marker_type.
struct Marker {
  bool commit = false;
  int32_t coordinator_epoch = -1;
};
std::optional<Marker> parse_marker(std::span<const uint8_t> batch);

// One COMMIT or ABORT marker batch for `producer_id` at `epoch` (base offset 0: the log assigns).
std::vector<uint8_t> build_marker(int64_t producer_id, int16_t epoch, int32_t coordinator_epoch,
                                  bool commit, int64_t timestamp_ms);

}  // namespace strata::protocol
