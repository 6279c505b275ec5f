// Test helper: PkState::write with the partition log's own append (the broker's produce path
// without the network), keeping a copy of the changelog batch as appended (offsets assigned).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pkindex/pk_state.h"
#include "storage/partition_log.h"

namespace strata::pkindex::testing {

struct Written {
  WriteResult result;
  std::vector<uint8_t> batch;  // the changelog batch the log received (empty when none)
  bool ok() const {
    return result.status.ok() && result.appended.producer_check == storage::ProducerCheck::ok;
  }
};

// `log_now` is the log's append time; the state's TTL append time is its own clock (now_ms()).
// `fail_append` makes the append fail (nothing reaches the log) to exercise the rollback.
inline Written write_through(PkState& state, storage::PartitionLog& log,
                             std::span<const uint8_t> input, int64_t log_now,
                             codec::Compression codec = codec::Compression::none, bool hold = false,
                             bool fail_append = false) {
  Written w;
  WriteInput in{protocol::RecordBatchView(input), codec};
  in.hold = hold;
  w.result = state.write(in, state.now_ms(),
                         [&](std::span<uint8_t> out) -> Result<storage::PartitionLog::AppendInfo> {
                           if (fail_append)
                             return Status(Errc::io_error, "injected append failure");
                           auto r = log.append(out, log_now);
                           w.batch.assign(out.begin(), out.end());
                           return r;
                         });
  return w;
}

}  // namespace strata::pkindex::testing
