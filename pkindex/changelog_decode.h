// Changelog decoding: the typed changes (insert / update / delete) of one record batch of a
// primary-key table's partition log, read from the strata.change / strata.before headers the
// broker writes (protocol/pk/change_headers.h). Used by the ReadChangelog handler
// (broker/handlers/ext_read_changelog.cc) and reusable by tools (strata-dump, the CLI's consume).
// Owned by pkindex. Pure functions: any thread; a RecordReader is owned by
// one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "pkindex/merge_engine.h"
#include "protocol/base/result.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"

namespace strata::pkindex {

// One change; every span points into the batch bytes or the reader's decompression buffer and is
// valid until the reader is reset or destroyed (and the batch bytes are alive).
struct ChangeView {
  int64_t offset = -1;
  int64_t timestamp = -1;
  ChangeKind kind = ChangeKind::none;  // never none in decode_changes output
  std::span<const uint8_t> key;
  std::optional<std::span<const uint8_t>> before;  // full image mode: update, delete
  std::optional<std::span<const uint8_t>> after;   // insert, update
};

// Appends to `out` the changes of `batch` at offsets >= `from_offset`, in offset order. Records
// whose kind is `none`, that carry no (or an unknown) strata.change header or no key, and control
// batches yield nothing. `out` is not cleared (callers reuse it: no per-record allocation once its
// capacity suffices). Errors: Errc::corruption / unsupported / too_large from the record reader
// (nothing is appended for the failing batch past the records already decoded).
Status decode_changes(protocol::RecordReader& reader, const protocol::RecordBatchView& batch,
                      int64_t from_offset, std::vector<ChangeView>& out);

}  // namespace strata::pkindex
