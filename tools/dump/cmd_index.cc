// `strata-dump index FILE.index|FILE.timeindex [--verify]`: entries, self-checks and, with
// --verify, a check against the segment's .log.
#include <filesystem>
#include <vector>

#include "tools/dump/commands.h"
#include "tools/dump/index_check.h"
#include "tools/dump/report_json.h"

namespace strata::dump {
namespace {

// Feeds a .log's batches to an index verifier.
class VerifyingVisitor final : public SegmentVisitor {
 public:
  VerifyingVisitor(OffsetIndexVerifier* offsets, TimeIndexVerifier* times)
      : offsets_(offsets), times_(times) {}
  void on_batch(const BatchInfo& b, std::span<const uint8_t>) override {
    ++batches;
    if (offsets_) offsets_->on_batch(b);
    if (times_) times_->on_batch(b);
  }
  void on_problem(const Problem&) override { ++log_problems; }
  uint64_t batches = 0;
  uint64_t log_problems = 0;

 private:
  OffsetIndexVerifier* offsets_;
  TimeIndexVerifier* times_;
};

constexpr uint64_t kMaxIndexBytes = 1ull << 30;

}  // namespace

int run_index(const IndexOptions& options, Output& out) {
  namespace fs = std::filesystem;
  fs::path path(options.path);
  std::string name = path.filename().string();
  bool time = false;
  std::optional<int64_t> base = parse_offset_file_name(name, ".index");
  if (!base) {
    base = parse_offset_file_name(name, ".timeindex");
    time = base.has_value();
  }
  if (!base) {
    if (path.extension() == ".timeindex") {
      time = true;
    } else if (path.extension() != ".index") {
      return fail(out, name + ": expected a <20-digit base offset>.index or .timeindex file");
    }
  }
  auto bytes = read_small_file(options.path, kMaxIndexBytes);
  if (!bytes.ok()) return fail(out, bytes.status().to_string());
  int64_t base_offset = base.value_or(0);

  std::vector<Problem> problems;
  std::vector<OffsetIndexEntry> offsets;
  std::vector<TimeIndexEntry> times;
  if (time)
    times = parse_time_index(*bytes, base_offset, problems);
  else
    offsets = parse_offset_index(*bytes, base_offset, problems);

  out.open_document();
  out.field("file", options.path);
  out.field("type", time ? "timeindex" : "index");
  out.field("base_offset", base_offset);
  if (!base) out.field("note", "file name carries no base offset; relative offsets shown from 0");
  out.field("file_size", bytes->size());
  out.field("entry_count", time ? times.size() : offsets.size());
  out.open_list("entries");
  for (size_t i = 0; i < offsets.size(); ++i) {
    out.list_item(
        ojson{{"index", i}, {"offset", offsets[i].offset}, {"position", offsets[i].position}});
  }
  for (size_t i = 0; i < times.size(); ++i) {
    out.list_item(
        ojson{{"index", i}, {"timestamp", times[i].timestamp}, {"offset", times[i].offset}});
  }
  out.close_list();

  if (options.verify) {
    std::string log = options.log_path;
    if (log.empty()) log = (path.parent_path() / (path.stem().string() + ".log")).string();
    auto src = FileSource::open(log);
    if (!src.ok()) {
      problems.push_back({ProblemKind::index, 0, 0, -1,
                          "--verify: cannot read the segment: " + src.status().to_string()});
    } else {
      OffsetIndexVerifier ov(offsets);
      TimeIndexVerifier tv(times);
      VerifyingVisitor c(time ? nullptr : &ov, time ? &tv : nullptr);
      ScanOptions so;
      so.segment_base = base ? *base : -1;
      auto sum = scan_segment(**src, so, c);
      if (!sum.ok()) {
        problems.push_back({ProblemKind::index, 0, 0, -1, "--verify: " + sum.status().to_string()});
      } else {
        if (time) {
          tv.finish(problems);
          if (!times.empty() && sum->max_timestamp > times.back().timestamp) {
            // Not an error: the broker adds the final entry when it seals the segment.
            out.field("note_max_timestamp",
                      "last entry's timestamp is below the segment's max timestamp " +
                          std::to_string(sum->max_timestamp) + " (segment not sealed)");
          }
        } else {
          ov.finish((*src)->size(), problems);
        }
        ojson v;
        v["log"] = log;
        v["log_batches"] = c.batches;
        v["log_problems"] = c.log_problems;
        v["log_last_offset"] = sum->last_offset;
        out.field("verified_against", v);
      }
    }
  }
  out.open_list("problems");
  for (const auto& p : problems) out.list_item(problem_json(p), "PROBLEM ");
  out.close_list();
  out.field("status", problems.empty() ? "ok" : "CORRUPT");
  out.close_document();
  return problems.empty() ? kExitOk : kExitProblems;
}

}  // namespace strata::dump
