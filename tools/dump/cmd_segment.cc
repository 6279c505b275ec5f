// `strata-dump segment FILE.log`: every batch header, optionally every record, and every problem.
#include <filesystem>
#include <vector>

#include "protocol/record/record_reader.h"
#include "tools/dump/commands.h"
#include "tools/dump/record_decode.h"
#include "tools/dump/report_json.h"
#include "tools/dump/segment_scan.h"

namespace strata::dump {
namespace {

class SegmentPrinter final : public SegmentVisitor {
 public:
  SegmentPrinter(const SegmentOptions& options, Output& out) : options_(options), out_(out) {}

  void on_batch(const BatchInfo& batch, std::span<const uint8_t> bytes) override {
    ojson j = batch_json(batch);
    bool want_records = options_.records && batch.valid() &&
                        (options_.max_records < 0 || printed_ < options_.max_records);
    if (!want_records) {
      out_.list_item(j);
      return;
    }
    ojson records = ojson::array();
    size_t max = options_.max_records < 0 ? static_cast<size_t>(-1)
                                          : static_cast<size_t>(options_.max_records - printed_);
    Status st = for_each_record(reader_, bytes, max, [&](const DecodedRecord& r) {
      records.push_back(record_json(r, options_.max_bytes));
    });
    printed_ += static_cast<int64_t>(records.size());
    if (out_.format() == Format::json) {
      j["records"] = std::move(records);
      out_.list_item(j);
    } else {
      out_.list_item(j);
      for (const auto& r : records) out_.list_item(r, "| ");
    }
    if (!st.ok()) {
      on_problem({ProblemKind::bad_records, batch.position, batch.position + batch.size,
                  batch.base_offset, st.to_string()});
      ++extra_problems_;
    }
  }

  void on_problem(const Problem& p) override {
    problems_.push_back(p);
    if (out_.format() == Format::text) out_.list_item(problem_json(p), "PROBLEM ");
  }

  const std::vector<Problem>& problems() const { return problems_; }
  uint64_t extra_problems() const { return extra_problems_; }

 private:
  const SegmentOptions& options_;
  Output& out_;
  protocol::RecordReader reader_;
  int64_t printed_ = 0;
  uint64_t extra_problems_ = 0;
  std::vector<Problem> problems_;
};

}  // namespace

int run_segment(const SegmentOptions& options, Output& out) {
  auto src = FileSource::open(options.path);
  if (!src.ok()) return fail(out, src.status().to_string());
  ScanOptions scan;
  std::string name = std::filesystem::path(options.path).filename().string();
  if (auto base = parse_offset_file_name(name, ".log")) scan.segment_base = *base;

  out.open_document();
  out.field("file", options.path);
  out.field("segment_base_offset", scan.segment_base);
  out.field("file_size", (*src)->size());
  out.open_list("batches");
  SegmentPrinter printer(options, out);
  auto sum = scan_segment(**src, scan, printer);
  out.close_list();
  if (!sum.ok()) {
    out.close_document();
    return fail(out, sum.status().to_string());
  }
  sum->problems += printer.extra_problems();
  if (out.format() == Format::json) {
    out.open_list("problems");
    for (const auto& p : printer.problems()) out.list_item(problem_json(p));
    out.close_list();
  }
  ojson s = summary_json(*sum);
  s["status"] = sum->problems == 0 ? "ok" : "CORRUPT";
  out.field("summary", s);
  out.close_document();
  return sum->problems == 0 ? kExitOk : kExitProblems;
}

}  // namespace strata::dump
