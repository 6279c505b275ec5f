// Helpers for storage unit tests: a fresh temporary directory per test and RecordBatch v2 builders.
// Test-only; single-threaded use.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "protocol/record/batch_builder.h"
#include "protocol/record/record_batch.h"

namespace strata::storage::testing {

// A unique empty directory removed at destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "strata-storage-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A batch with one record per timestamp, each value `value_size` bytes of 'v'.
inline std::vector<uint8_t> make_batch(const std::vector<int64_t>& timestamps,
                                       size_t value_size = 10,
                                       codec::Compression c = codec::Compression::none) {
  protocol::RecordBatchBuilder b(c);
  std::vector<uint8_t> value(value_size, 'v');
  for (int64_t ts : timestamps) {
    b.add(ts, std::nullopt, std::span<const uint8_t>(value));
  }
  return b.build();
}

// A batch of `records` records, all with timestamp `ts`.
inline std::vector<uint8_t> make_batch_n(int records, int64_t ts = 1000, size_t value_size = 10) {
  return make_batch(std::vector<int64_t>(static_cast<size_t>(records), ts), value_size);
}

inline uint64_t file_size(const std::string& path) { return std::filesystem::file_size(path); }

}  // namespace strata::storage::testing

#include "storage/partition_log.h"

namespace strata::storage::testing {

// The bytes of a read result, concatenated.
inline std::vector<uint8_t> read_bytes(const PartitionLog::ReadResult& r) {
  std::vector<uint8_t> out;
  for (const auto& range : r.ranges) {
    size_t at = out.size();
    out.resize(at + range.size);
    auto n = range.file->read(range.position, range.size, out.data() + at);
    EXPECT_TRUE(n.ok());
    EXPECT_EQ(*n, range.size);
  }
  return out;
}

// Header facts of one batch returned by a read (copied out, so no dangling views).
struct BatchFacts {
  int64_t base;
  int64_t last;
  int32_t epoch;
  int64_t base_offset() const { return base; }
  int64_t last_offset() const { return last; }
  int64_t next_offset() const { return last + 1; }
  int32_t partition_leader_epoch() const { return epoch; }
};

// The whole batches in `bytes`, each checked to be a valid batch (CRC included).
inline std::vector<BatchFacts> split_batches(const std::vector<uint8_t>& bytes) {
  std::vector<BatchFacts> out;
  std::span<const uint8_t> rest(bytes);
  while (!rest.empty()) {
    size_t n = protocol::peek_batch_size(rest);
    EXPECT_GT(n, 0u);
    EXPECT_LE(n, rest.size());
    if (n == 0 || n > rest.size()) break;
    protocol::RecordBatchView v(rest.first(n));
    EXPECT_EQ(v.validate(), protocol::BatchCheck::ok);
    out.push_back({v.base_offset(), v.last_offset(), v.partition_leader_epoch()});
    rest = rest.subspan(n);
  }
  return out;
}

inline std::unique_ptr<PartitionLog> open_log(Env* env, const std::string& dir,
                                              LogConfig config = {}, int64_t now_ms = 0) {
  auto log = PartitionLog::open(env, dir, config, now_ms);
  EXPECT_TRUE(log.ok()) << log.status().to_string();
  return log.ok() ? std::move(*log) : nullptr;
}

// Appends a batch of `records` records; returns its base offset (-1 on failure).
inline int64_t append_n(PartitionLog& log, int records, int64_t ts = 1000, int64_t now_ms = 0,
                        size_t value_size = 10) {
  auto batch = make_batch_n(records, ts, value_size);
  auto r = log.append(batch, now_ms);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->base_offset : -1;
}

}  // namespace strata::storage::testing
