// `strata-dump checkpoint DIR [--keys N]`: a PK partition's RocksDB state (kv/ or a checkpoint).
#include <charconv>
#include <filesystem>

#include "tools/dump/commands.h"
#include "tools/dump/kv_inspect.h"
#include "tools/dump/report_json.h"

namespace strata::dump {

int run_checkpoint(const CheckpointOptions& options, Output& out) {
  auto report = inspect_kv(options.path, options.keys);
  if (!report.ok()) return fail(out, report.status().to_string());
  out.open_document();
  out.field("dir", options.path);
  // kv-checkpoints/<20-digit applied offset>/: the name is the offset the checkpoint holds.
  std::string name = std::filesystem::path(options.path).lexically_normal().filename().string();
  if (name.empty()) {
    name = std::filesystem::path(options.path).lexically_normal().parent_path().filename().string();
  }
  int64_t named = -1;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), named);
  bool is_checkpoint = !name.empty() && ec == std::errc() && p == name.data() + name.size();
  std::vector<std::string> problems = report->problems;
  if (is_checkpoint) {
    out.field("checkpoint_offset", named);
    if (report->applied_offset && *report->applied_offset != named) {
      problems.push_back("directory name says offset " + std::to_string(named) +
                         " but m.applied is " + std::to_string(*report->applied_offset));
    }
  }
  ojson kv = kv_json(*report, options.max_bytes);
  kv["problems"] = problems;
  if (out.format() == Format::text && kv.contains("first_rows")) {
    ojson rows = std::move(kv["first_rows"]);
    kv.erase("first_rows");
    out.field("kv", kv);
    for (const auto& r : rows) out.list_item(r, "| ");
  } else {
    out.field("kv", kv);
  }
  out.field("status", problems.empty() ? "ok" : "CORRUPT");
  out.close_document();
  return problems.empty() ? kExitOk : kExitProblems;
}

}  // namespace strata::dump
