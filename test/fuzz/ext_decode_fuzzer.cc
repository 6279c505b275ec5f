// libFuzzer target (issue 5, H1): the request bodies of the five extension APIs and the changelog
// decoder. The first input byte picks the target; the rest is
//   0..4: the Protobuf body of a Lookup / PrefixLookup / Scan / ReadChangelog / DescribeTable
//         request as the broker parses it (ext_common.h parse_ext_body); a parsed message is
//         re-serialised and parsed again, and must give the same bytes;
//   5:    one record batch for pkindex::decode_changes (what ReadChangelog and strata-dump do with
//         log bytes): a well-formed header is patched in (length) so the records are reached.
// Must not crash, trip a sanitizer or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pkindex/changelog_decode.h"
#include "protocol/ext/describe_table.pb.h"
#include "protocol/ext/lookup.pb.h"
#include "protocol/ext/prefix_lookup.pb.h"
#include "protocol/ext/read_changelog.pb.h"
#include "protocol/ext/scan.pb.h"
#include "protocol/record/batch_format.h"

namespace {

template <typename Msg>
void round_trip(const uint8_t* data, size_t size) {
  Msg m;
  if (!m.ParseFromArray(data, static_cast<int>(size))) return;
  const std::string once = m.SerializeAsString();
  Msg again;
  if (!again.ParseFromString(once)) __builtin_trap();
  if (again.SerializeAsString() != once) __builtin_trap();
}

void changelog(const uint8_t* data, size_t size) {
  namespace sp = strata::protocol;
  std::vector<uint8_t> batch(data, data + size);
  if (batch.size() < sp::batch_format::kHeaderSize) batch.resize(sp::batch_format::kHeaderSize);
  // Make batchLength consistent so RecordReader gets past the header checks.
  const auto len = static_cast<uint32_t>(batch.size() - 12);
  batch[8] = static_cast<uint8_t>(len >> 24);
  batch[9] = static_cast<uint8_t>(len >> 16);
  batch[10] = static_cast<uint8_t>(len >> 8);
  batch[11] = static_cast<uint8_t>(len);
  sp::RecordBatchView view(batch);
  sp::RecordReader reader;
  std::vector<strata::pkindex::ChangeView> out;
  const int64_t from = view.base_offset() + (size > 0 ? data[0] % 4 : 0);
  (void)strata::pkindex::decode_changes(reader, view, from, out);
  for (const auto& c : out) {
    if (c.offset < from) __builtin_trap();
    if (c.kind == strata::pkindex::ChangeKind::none) __builtin_trap();
    // Touch every byte of the views (ASan checks they point into live memory).
    uint32_t acc = 0;
    for (uint8_t b : c.key) acc += b;
    if (c.before)
      for (uint8_t b : *c.before) acc += b;
    if (c.after)
      for (uint8_t b : *c.after) acc += b;
    asm volatile("" : : "r"(acc));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t which = data[0] % 6;
  ++data;
  --size;
  switch (which) {
    case 0:
      round_trip<strata::ext::LookupRequest>(data, size);
      break;
    case 1:
      round_trip<strata::ext::PrefixLookupRequest>(data, size);
      break;
    case 2:
      round_trip<strata::ext::ScanRequest>(data, size);
      break;
    case 3:
      round_trip<strata::ext::ReadChangelogRequest>(data, size);
      break;
    case 4:
      round_trip<strata::ext::DescribeTableRequest>(data, size);
      break;
    default:
      changelog(data, size);
      break;
  }
  return 0;
}
