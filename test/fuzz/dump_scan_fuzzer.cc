// libFuzzer target for strata-dump's readers of untrusted files (issue 6, H6): the input is used
// as a .log segment (scan, record decoding, JSON rendering) and as .index / .timeindex bytes
// verified against it. Anything but a clean return is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "protocol/record/record_reader.h"
#include "tools/dump/index_check.h"
#include "tools/dump/record_decode.h"
#include "tools/dump/report_json.h"
#include "tools/dump/segment_scan.h"

namespace {

using namespace strata::dump;

class Visitor final : public SegmentVisitor {
 public:
  Visitor(OffsetIndexVerifier& o, TimeIndexVerifier& t) : offsets_(o), times_(t) {}
  void on_batch(const BatchInfo& b, std::span<const uint8_t> bytes) override {
    offsets_.on_batch(b);
    times_.on_batch(b);
    (void)batch_json(b).dump();
    if (!b.valid()) return;
    (void)for_each_record(reader_, bytes, 1000,
                          [](const DecodedRecord& r) { (void)record_json(r, 64).dump(); });
  }
  void on_problem(const Problem& p) override { (void)problem_json(p); }

 private:
  OffsetIndexVerifier& offsets_;
  TimeIndexVerifier& times_;
  strata::protocol::RecordReader reader_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> in(data, size);
  std::vector<Problem> problems;
  size_t idx = std::min<size_t>(size, 96);  // the first bytes double as index entries
  auto offsets = parse_offset_index(in.first(idx - idx % 8), 0, problems);
  auto times = parse_time_index(in.first(idx - idx % 12), 0, problems);
  OffsetIndexVerifier ov(offsets);
  TimeIndexVerifier tv(times);
  Visitor v(ov, tv);
  MemorySource src(std::vector<uint8_t>(data, data + size));
  ScanOptions o;
  o.segment_base = 0;
  auto sum = scan_segment(src, o, v);
  if (sum.ok()) {
    ov.finish(size, problems);
    tv.finish(problems);
    (void)summary_json(*sum).dump();
  }
  return 0;
}
