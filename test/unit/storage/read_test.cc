// PartitionLog::read: whole batches, max_bytes / min_one / upper bound, range errors, and reads
// concurrent with appends.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using namespace testing;  // NOLINT

class ReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = open_log(default_env(), tmp_.sub("t-0"));
    // Batches: [0..4] [5] [6..8] [9..18], sizes recorded.
    for (int n : {5, 1, 3, 10}) {
      auto b = make_batch_n(n);
      sizes_.push_back(static_cast<uint32_t>(b.size()));
      ASSERT_TRUE(log_->append(b, 0).ok());
    }
  }
  std::vector<int64_t> bases(const PartitionLog::ReadResult& r) {
    std::vector<int64_t> out;
    for (auto& b : split_batches(read_bytes(r))) out.push_back(b.base_offset());
    return out;
  }
  TempDir tmp_;
  std::unique_ptr<PartitionLog> log_;
  std::vector<uint32_t> sizes_;
};

TEST_F(ReadTest, StartsAtTheBatchContainingTheOffset) {
  auto r = log_->read(7, 1 << 20, false, log_->high_watermark());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(bases(*r), (std::vector<int64_t>{6, 9}));
  EXPECT_EQ(r->total_bytes, sizes_[2] + sizes_[3]);
  ASSERT_EQ(r->ranges.size(), 1u);  // contiguous batches merge into one file range
  EXPECT_EQ(r->ranges[0].position, uint64_t{sizes_[0]} + sizes_[1]);
}

TEST_F(ReadTest, HonoursMaxBytes) {
  // Room for the first two batches but not the third.
  auto r = log_->read(0, sizes_[0] + sizes_[1] + sizes_[2] - 1, false, log_->high_watermark());
  EXPECT_EQ(bases(*r), (std::vector<int64_t>{0, 5}));
  // Too small for even one batch.
  r = log_->read(0, sizes_[0] - 1, false, log_->high_watermark());
  EXPECT_TRUE(r->ranges.empty());
  EXPECT_EQ(r->total_bytes, 0u);
  // min_one returns the first whole batch anyway, and only that one.
  r = log_->read(0, 1, true, log_->high_watermark());
  EXPECT_EQ(bases(*r), (std::vector<int64_t>{0}));
  EXPECT_EQ(r->total_bytes, sizes_[0]);
}

TEST_F(ReadTest, NeverPassesTheUpperBound) {
  auto r = log_->read(0, 1 << 20, true, 6);
  EXPECT_EQ(bases(*r), (std::vector<int64_t>{0, 5}));
  r = log_->read(6, 1 << 20, true, 6);  // offset == bound: empty
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ranges.empty());
  r = log_->read(0, 1 << 20, true, 3);  // the bound falls inside the first batch
  EXPECT_TRUE(r->ranges.empty());
  r = log_->read(19, 1 << 20, true, log_->high_watermark());  // at the log end: empty
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ranges.empty());
}

TEST_F(ReadTest, OutOfRange) {
  EXPECT_EQ(log_->read(20, 100, true, 100).status().code(), Errc::out_of_range);
  EXPECT_EQ(log_->read(-1, 100, true, 100).status().code(), Errc::out_of_range);
}

TEST(ReadConcurrency, ReadersNeverSeePartialBatches) {
  TempDir tmp;
  LogConfig config;
  config.segment_bytes = 16 * 1024;  // many rolls while readers run
  auto log = open_log(default_env(), tmp.sub("t-0"), config);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!done.load()) {
        int64_t hw = log->high_watermark();
        auto r = log->read(0, 1 << 30, true, hw);
        if (!r.ok()) {
          ++bad;
          continue;
        }
        int64_t expect = 0;
        std::vector<uint8_t> bytes = read_bytes(*r);
        std::span<const uint8_t> rest(bytes);
        while (!rest.empty()) {
          size_t n = protocol::peek_batch_size(rest);
          if (n == 0 || n > rest.size()) {
            ++bad;
            break;
          }
          protocol::RecordBatchView v(rest.first(n));
          if (v.validate() != protocol::BatchCheck::ok || v.base_offset() != expect) ++bad;
          expect = v.next_offset();
          rest = rest.subspan(n);
        }
        if (expect != hw) ++bad;  // everything below the high watermark was returned
      }
    });
  }
  for (int i = 0; i < 2000; ++i) append_n(*log, 1 + i % 4, 1000, 0, 30);
  done = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(log->segment_base_offsets().size(), 3u);
}

}  // namespace
}  // namespace strata::storage
