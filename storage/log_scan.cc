#include "storage/log_scan.h"

#include <vector>

#include "storage/partition_log.h"

namespace strata::storage {

namespace {
constexpr uint32_t kReadChunk = 4u << 20;
}  // namespace

Status for_each_batch(const PartitionLog& log, int64_t from, int64_t end,
                      const std::function<Status(const protocol::RecordBatchView&)>& fn) {
  std::vector<uint8_t> buf;
  while (from < end) {
    auto read = log.read(from, kReadChunk, true, end);
    if (!read.ok()) return read.status();
    if (read->ranges.empty()) break;
    const int64_t before = from;
    for (const auto& range : read->ranges) {
      buf.resize(range.size);
      auto n = range.file->read(range.position, range.size, buf.data());
      if (!n.ok()) return n.status();
      if (*n != range.size) return Status(Errc::corruption, "short read while scanning the log");
      std::span<const uint8_t> rest(buf.data(), buf.size());
      while (!rest.empty()) {
        const size_t size = protocol::peek_batch_size(rest);
        if (size == 0 || size > rest.size()) return Status(Errc::corruption, "torn batch in log");
        protocol::RecordBatchView batch(rest.first(size));
        rest = rest.subspan(size);
        if (batch.last_offset() < from) continue;
        STRATA_RETURN_IF_ERROR(fn(batch));
        from = batch.next_offset();
      }
    }
    if (from == before) return Status(Errc::corruption, "log scan made no progress");
  }
  return Status::Ok();
}

}  // namespace strata::storage
