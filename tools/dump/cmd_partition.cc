// `strata-dump partition DIR`: every segment (batches summary, index + timeindex verification),
// the partition's checkpoint files and its PK state (kv/ and kv-checkpoints/*), cross-checked.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "storage/file_names.h"
#include "tools/dump/commands.h"
#include "tools/dump/index_check.h"
#include "tools/dump/kv_inspect.h"
#include "tools/dump/report_json.h"

namespace strata::dump {
namespace fs = std::filesystem;
namespace {

// Feeds the segment's batches to both index verifiers (constant memory in the log size) and
// keeps the scan problems.
class SegmentChecker final : public SegmentVisitor {
 public:
  SegmentChecker(OffsetIndexVerifier* offsets, TimeIndexVerifier* times)
      : offsets_(offsets), times_(times) {}
  void on_batch(const BatchInfo& b, std::span<const uint8_t>) override {
    if (offsets_) offsets_->on_batch(b);
    if (times_) times_->on_batch(b);
  }
  void on_problem(const Problem& p) override { problems.push_back(p); }
  std::vector<Problem> problems;

 private:
  OffsetIndexVerifier* offsets_;
  TimeIndexVerifier* times_;
};

constexpr uint64_t kMaxSmallFile = 1ull << 30;

// First line of a small text file, trimmed; nullopt when absent.
std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > 4096) s.resize(4096);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

int run_partition(const PartitionOptions& options, Output& out) {
  std::error_code ec;
  fs::path dir(options.path);
  if (!fs::is_directory(dir, ec)) return fail(out, options.path + " is not a directory");
  std::vector<std::pair<int64_t, fs::path>> logs;
  std::vector<std::string> snapshots;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (auto base = parse_offset_file_name(name, ".log")) logs.emplace_back(*base, e.path());
    if (parse_offset_file_name(name, ".snapshot")) snapshots.push_back(name);
  }
  if (ec) return fail(out, "list " + options.path + ": " + ec.message());
  std::sort(logs.begin(), logs.end());
  std::sort(snapshots.begin(), snapshots.end());

  uint64_t problem_count = 0;
  out.open_document();
  out.field("dir", options.path);
  std::string dname = dir.lexically_normal().filename().string();
  if (dname.empty()) dname = dir.lexically_normal().parent_path().filename().string();
  if (auto tp = storage::parse_partition_dir_name(dname)) {
    out.field("topic", tp->topic);
    out.field("partition", tp->partition);
  }
  ojson files;
  for (std::string_view f :
       {storage::kRecoveryPointFile, storage::kLogStartOffsetFile, storage::kCleanerCheckpointFile,
        storage::kPartitionMetadata, storage::kLeaderEpochCheckpoint}) {
    auto t = read_text(dir / std::string(f));
    files[std::string(f)] = t ? ojson(*t) : ojson(nullptr);
  }
  files[std::string(storage::kCleanShutdownFile)] =
      fs::exists(dir / std::string(storage::kCleanShutdownFile), ec);
  files["producer_snapshots"] = snapshots;
  out.field("files", files);

  int64_t log_start = -1, log_end = -1;  // first valid offset, last valid offset + 1
  uint64_t total_records = 0, total_bytes = 0;
  int64_t prev_last = -1;
  out.open_list("segments");
  for (const auto& [base, log_path] : logs) {
    ojson seg;
    seg["base_offset"] = base;
    seg["log"] = log_path.filename().string();
    std::vector<ojson> seg_problems;
    auto src = FileSource::open(log_path.string());
    if (!src.ok()) {
      seg["error"] = src.status().to_string();
      ++problem_count;
      out.list_item(seg, "segment ");
      continue;
    }
    // Both indexes are read first and verified while the .log is scanned.
    ojson index_json[2];
    std::vector<Problem> index_problems[2];
    std::vector<OffsetIndexEntry> offset_entries;
    std::vector<TimeIndexEntry> time_entries;
    bool have[2] = {false, false};
    for (int t = 0; t < 2; ++t) {
      fs::path ip = t == 1 ? storage::segment_time_index_path(dir.string(), base)
                           : storage::segment_index_path(dir.string(), base);
      index_json[t]["file"] = ip.filename().string();
      if (!fs::exists(ip, ec)) {
        index_json[t]["present"] = false;
      } else if (auto bytes = read_small_file(ip.string(), kMaxSmallFile); !bytes.ok()) {
        index_problems[t].push_back({ProblemKind::index, 0, 0, -1, bytes.status().to_string()});
      } else if (t == 1) {
        time_entries = parse_time_index(*bytes, base, index_problems[t]);
        index_json[t]["entries"] = time_entries.size();
        have[t] = true;
      } else {
        offset_entries = parse_offset_index(*bytes, base, index_problems[t]);
        index_json[t]["entries"] = offset_entries.size();
        have[t] = true;
      }
    }
    OffsetIndexVerifier offsets(offset_entries);
    TimeIndexVerifier times(time_entries);
    SegmentChecker c(have[0] ? &offsets : nullptr, have[1] ? &times : nullptr);
    ScanOptions so;
    so.segment_base = base;
    auto sum = scan_segment(**src, so, c);
    if (!sum.ok()) {
      seg["error"] = sum.status().to_string();
      ++problem_count;
      out.list_item(seg, "segment ");
      continue;
    }
    if (have[0]) offsets.finish((*src)->size(), index_problems[0]);
    if (have[1]) times.finish(index_problems[1]);
    for (const auto& p : c.problems) seg_problems.push_back(problem_json(p));
    if (sum->first_offset >= 0) {
      if (prev_last >= 0 && sum->first_offset <= prev_last) {
        Problem p{ProblemKind::offset_order, 0, 0, sum->first_offset,
                  "segment's first offset " + std::to_string(sum->first_offset) +
                      " overlaps the previous segment's last offset " + std::to_string(prev_last)};
        seg_problems.push_back(problem_json(p));
      }
      if (log_start < 0) log_start = sum->first_offset;
      log_end = std::max(log_end, sum->last_offset + 1);
      prev_last = std::max(prev_last, sum->last_offset);
    }
    total_records += sum->records;
    total_bytes += sum->file_size;
    seg["summary"] = summary_json(*sum);
    for (int t = 0; t < 2; ++t) {
      ojson pj = ojson::array();
      for (const auto& p : index_problems[t]) pj.push_back(problem_json(p));
      index_json[t]["problems"] = pj;
      problem_count += index_problems[t].size();
      seg[t == 1 ? "timeindex" : "index"] = index_json[t];
    }
    problem_count += seg_problems.size();
    seg["problems"] = seg_problems;
    out.list_item(seg, "segment ");
  }
  out.close_list();

  // PK state: kv/ and kv-checkpoints/<offset>/.
  std::vector<fs::path> kv_dirs;
  if (fs::is_directory(dir / "kv", ec)) kv_dirs.push_back(dir / "kv");
  if (fs::is_directory(dir / "kv-checkpoints", ec)) {
    std::vector<fs::path> cps;
    for (const auto& e : fs::directory_iterator(dir / "kv-checkpoints", ec)) {
      if (e.is_directory(ec)) cps.push_back(e.path());
    }
    std::sort(cps.begin(), cps.end());
    kv_dirs.insert(kv_dirs.end(), cps.begin(), cps.end());
  }
  out.open_list("kv");
  for (const auto& kd : kv_dirs) {
    auto r = inspect_kv(kd.string(), 0);
    ojson kj;
    if (!r.ok()) {
      kj["path"] = kd.string();
      kj["error"] = r.status().to_string();
      ++problem_count;
    } else {
      kj = kv_json(*r, 0);
      std::vector<std::string> problems = r->problems;
      if (r->applied_offset && log_end >= 0 && *r->applied_offset >= log_end) {
        problems.push_back("applied offset " + std::to_string(*r->applied_offset) +
                           " is at or past the log end " + std::to_string(log_end) +
                           " (state ahead of the log; the broker rebuilds from a checkpoint)");
      }
      kj["problems"] = problems;
      problem_count += problems.size();
    }
    out.list_item(kj, "kv ");
  }
  out.close_list();

  ojson s;
  s["segments"] = logs.size();
  s["log_start_offset"] = log_start;
  s["log_end_offset"] = log_end;
  s["records"] = total_records;
  s["log_bytes"] = total_bytes;
  s["problems"] = problem_count;
  s["status"] = problem_count == 0 ? "ok" : "CORRUPT";
  out.field("summary", s);
  out.close_document();
  return problem_count == 0 ? kExitOk : kExitProblems;
}

}  // namespace strata::dump
