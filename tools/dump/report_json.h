// JSON shapes of strata-dump's report items (batches, records, problems, index entries, RocksDB
// state). One place so `segment`, `index`, `checkpoint` and `partition` print the same fields;
// docs/dump.md documents them.
//
// Owned by strata-dump (tools/dump). Pure functions; any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tools/dump/index_check.h"
#include "tools/dump/kv_inspect.h"
#include "tools/dump/output.h"
#include "tools/dump/record_decode.h"
#include "tools/dump/segment_scan.h"

namespace strata::dump {

ojson batch_json(const BatchInfo& b);
ojson record_json(const DecodedRecord& r, size_t max_bytes);
ojson problem_json(const Problem& p);
ojson summary_json(const ScanSummary& s);
ojson kv_json(const KvReport& r, size_t max_bytes);

// "<20 digits><suffix>" -> base offset; nullopt for other names.
std::optional<int64_t> parse_offset_file_name(std::string_view file_name, std::string_view suffix);

}  // namespace strata::dump
