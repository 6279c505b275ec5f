// libFuzzer target: log recovery from arbitrary bytes. The input becomes the only segment of a
// partition directory (00000000000000000000.log, no index, no clean-shutdown marker), so
// PartitionLog::open takes the unclean path: it validates batches from the start, truncates at the
// first torn or corrupt one and rebuilds the indexes. The recovered log must then read back every
// batch up to its end and accept a new append at its log end offset.
// Must not crash, trip a sanitizer or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "protocol/record/batch_builder.h"
#include "storage/env.h"
#include "storage/partition_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::string root = [] {
    std::string t = (std::filesystem::temp_directory_path() / "strata-fuzz-XXXXXX").string();
    if (!::mkdtemp(t.data())) std::abort();
    return t;
  }();
  const std::string dir = root + "/t-0";
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/00000000000000000000.log", std::ios::binary);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto log = strata::storage::PartitionLog::open(strata::storage::default_env(), dir, {}, 1);
  if (!log.ok()) return 0;  // refusing a directory is fine; crashing is not
  auto& l = **log;
  const int64_t end = l.log_end_offset();
  if (l.high_watermark() > end || l.log_start_offset() > end) __builtin_trap();
  int64_t offset = l.log_start_offset();
  while (offset < end) {
    auto read = l.read(offset, 1 << 20, true, end);
    if (!read.ok() || read->ranges.empty()) break;
    offset = end;  // one read proves the recovered range is readable
  }
  strata::protocol::RecordBatchBuilder bb;
  const std::string k = "k", v = "v";
  bb.add(1, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(k.data()), k.size()),
         std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size()), {});
  auto batch = bb.build();
  auto app = l.append(batch, 1);
  if (app.ok() && app->base_offset != end) __builtin_trap();
  (void)l.close();
  return 0;
}
