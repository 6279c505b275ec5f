// Record decoding for strata-dump: iterates the records of one valid batch (RecordReader, which
// decompresses and bounds every length) and pulls out the primary-key change kind and
// before-image the broker writes as `strata.change` / `strata.before` headers
// (protocol/pk/change_headers.h).
//
// Owned by strata-dump (tools/dump). Pure functions; one thread per reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string_view>

#include "protocol/base/result.h"
#include "protocol/record/record.h"
#include "protocol/record/record_reader.h"

namespace strata::dump {

struct DecodedRecord {
  int64_t offset = 0;
  int64_t timestamp = 0;
  const protocol::Record* record = nullptr;  // key, value, headers (views into the batch)
  // From strata.change ("insert" | "update" | "delete" | "none"); nullopt on a log topic.
  std::optional<std::string_view> change;
  // strata.before: nullopt when absent; a null header value is an empty optional inside.
  std::optional<std::optional<std::span<const uint8_t>>> before;
};

// Calls `fn` for up to `max_records` records of `batch` (a batch that passed CRC checks). Fails
// with the reader's error (Errc::corruption, unsupported codec, ...) on malformed records, after
// reporting the records that did decode.
Status for_each_record(protocol::RecordReader& reader, std::span<const uint8_t> batch,
                       size_t max_records, const std::function<void(const DecodedRecord&)>& fn);

}  // namespace strata::dump
