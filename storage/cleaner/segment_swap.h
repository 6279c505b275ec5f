// The cleaner's crash-safe segment replacement (Kafka's .cleaned -> .swap -> rename protocol),
// one cleaned segment replacing the live segment with the same base offset:
//
//   1. CleanedSegmentWriter wrote and fsynced <base>.{log,index,timeindex}.cleaned.
//   2. rename <base>.index.cleaned -> .index.swap and .timeindex.cleaned -> .timeindex.swap,
//      fsync the dir, then rename <base>.log.cleaned -> <base>.log.swap and fsync the dir.
//      That last rename is the commit point: from here recovery completes the swap.
//   3. rename the .swap files over the live names (indexes first, the .log last), fsync the dir.
//
// recover_segment_swaps() runs at PartitionLog::open before segments are listed: .cleaned files are
// removed (the swap never committed); a <base>.log.swap completes step 3 (an index whose .swap file
// is gone is removed instead, so the segment's index is rebuilt rather than trusted); .swap index
// files without their .log.swap are removed; so are index files without a .log (left behind by a
// retention delete interrupted between files).
//
// Stateless; the caller serialises calls per partition directory.
#pragma once

#include <cstdint>
#include <string>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage::cleaner {

// Steps 2 and 3 above.
Status swap_in_cleaned_segment(Env* env, const std::string& dir, int64_t base_offset);

// Completes or discards interrupted swaps in `dir` (see above). Ok when nothing was pending.
Status recover_segment_swaps(Env* env, const std::string& dir);

}  // namespace strata::storage::cleaner
