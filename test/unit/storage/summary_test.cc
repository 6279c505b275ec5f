// Batch summaries (storage/batch_summary.h): the `.stats` side index of each segment is written
// as batches are appended, read back per segment, survives a restart, and never offers a summary
// of a batch that is not (or no longer) at its position: after a truncation and different
// batches, after a torn tail, after a corrupt entry.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "storage/file_names.h"
#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::append_n;
using testing::open_log;
using testing::TempDir;

// Payload = "n<record count>" of the batch; none for batches of exactly 7 records.
std::shared_ptr<const BatchSummarizer> counting_summarizer() {
  return std::make_shared<const BatchSummarizer>(
      [](std::span<const uint8_t> batch) -> std::optional<std::string> {
        protocol::RecordBatchView v(batch);
        if (v.record_count() == 7) return std::nullopt;
        std::string payload = "n";
        payload += std::to_string(v.record_count());
        return payload;
      });
}

std::vector<std::string> payloads(const PartitionLog& log, int64_t offset) {
  auto s = log.batch_summaries(offset, log.high_watermark());
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  std::vector<std::string> out;
  if (!s.ok()) return out;
  for (const auto& e : s->entries) {
    if (!check_batch_summary(*s->file, e)) continue;  // a stale entry: never used
    out.push_back(std::to_string(e.base_offset) + ":" + e.payload);
  }
  return out;
}

TEST(BatchSummaries, WrittenPerBatchAndReadFromTheBatchHoldingAnOffset) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"));
  log->set_batch_summarizer(counting_summarizer());
  append_n(*log, 2);  // 0..1
  append_n(*log, 3);  // 2..4
  append_n(*log, 7);  // 5..11: no summary
  append_n(*log, 1);  // 12
  using V = std::vector<std::string>;
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2", "2:n3", "12:n1"}));
  EXPECT_EQ(payloads(*log, 3), (V{"2:n3", "12:n1"}));
  EXPECT_EQ(payloads(*log, 12), (V{"12:n1"}));
  auto s = log->batch_summaries(2, log->high_watermark());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->segment_base, 0);
  EXPECT_EQ(s->segment_end, 13);
  // The entry locates the batch: its bytes are the batch.
  const BatchSummary& e = s->entries[0];
  std::vector<uint8_t> bytes(e.size);
  ASSERT_TRUE(s->file->read(e.position, e.size, bytes.data()).ok());
  EXPECT_EQ(protocol::RecordBatchView(bytes).base_offset(), 2);
  EXPECT_EQ(protocol::RecordBatchView(bytes).last_offset(), 4);
  // Bounds: below the upper bound only; outside the log -> out_of_range.
  auto upto = log->batch_summaries(0, 5);
  ASSERT_TRUE(upto.ok());
  EXPECT_EQ(upto->entries.size(), 2u);
  EXPECT_EQ(log->batch_summaries(13, 13).status().code(), Errc::out_of_range);
  // Without a summarizer nothing more is written.
  log->set_batch_summarizer(nullptr);
  append_n(*log, 2);
  EXPECT_EQ(payloads(*log, 12), (V{"12:n1"}));
}

TEST(BatchSummaries, OnePerSegmentAndKeptAcrossARestart) {
  TempDir tmp;
  LogConfig c;
  c.segment_bytes = 300;  // a few batches per segment
  {
    auto log = open_log(default_env(), tmp.sub("t-0"), c);
    log->set_batch_summarizer(counting_summarizer());
    for (int i = 0; i < 12; ++i) append_n(*log, 1 + i % 3);
    ASSERT_GT(log->segment_base_offsets().size(), 2u);
    ASSERT_TRUE(log->close().ok());
  }
  auto log = open_log(default_env(), tmp.sub("t-0"), c);
  int64_t total = 0;
  for (int64_t base : log->segment_base_offsets()) {
    auto s = log->batch_summaries(base, log->high_watermark());
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->segment_base, base);
    ASSERT_FALSE(s->entries.empty());
    EXPECT_EQ(s->entries.front().base_offset, base);
    for (const auto& e : s->entries) EXPECT_LT(e.last_offset, s->segment_end);
    total += static_cast<int64_t>(s->entries.size());
  }
  EXPECT_EQ(total, 12);
}

TEST(BatchSummaries, NeverOfferedForBatchesThatAreGone) {
  TempDir tmp;
  auto log = open_log(default_env(), tmp.sub("t-0"));
  log->set_batch_summarizer(counting_summarizer());
  append_n(*log, 2);  // 0..1
  append_n(*log, 3);  // 2..4
  append_n(*log, 4);  // 5..8
  // A follower's truncation, then other batches at the same offsets.
  ASSERT_TRUE(log->truncate_to(2).ok());
  append_n(*log, 5);  // 2..6
  append_n(*log, 1);  // 7
  using V = std::vector<std::string>;
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2", "2:n5", "7:n1"}));

  // A corrupt entry ends the file's valid prefix: later batches are simply unsummarised.
  const std::string stats = segment_summary_path(tmp.sub("t-0"), 0);
  {
    std::fstream f(stats, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(kSummaryEntryHeaderSize + 3);  // inside the second entry (the first's payload: 2 B)
    f.put('\x7f');
  }
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2"}));

  // reset_to drops every segment with its summaries.
  ASSERT_TRUE(log->reset_to(0).ok());
  EXPECT_FALSE(std::filesystem::exists(stats));
  append_n(*log, 3);
  EXPECT_EQ(payloads(*log, 0), (V{"0:n3"}));
}

TEST(BatchSummaries, ATornTailTakesItsSummariesWithIt) {
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  {
    auto log = open_log(default_env(), dir);
    log->set_batch_summarizer(counting_summarizer());
    append_n(*log, 2);
    append_n(*log, 3);
    // Dropped without close(): a crash; then the tail of the .log is lost.
  }
  const std::string seg = segment_log_path(dir, 0);
  std::filesystem::resize_file(seg, std::filesystem::file_size(seg) - 5);
  auto log = open_log(default_env(), dir);
  EXPECT_EQ(log->log_end_offset(), 2);
  using V = std::vector<std::string>;
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2"}));
  log->set_batch_summarizer(counting_summarizer());
  append_n(*log, 4);  // 2..5, where the torn batch was
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2", "2:n4"}));
}

TEST(BatchSummaries, RecoveredForTheActiveSegmentWhenTheSummarizerIsSet) {
  // A crash lost the tail of the .stats file (it is never fsynced before a roll): setting the
  // summarizer again (as the broker does when the partition opens) summarises the batches after
  // the last summarised one. A sealed segment's summaries were fsynced at the roll.
  TempDir tmp;
  const std::string dir = tmp.sub("t-0");
  const std::string stats = segment_summary_path(dir, 0);
  {
    auto log = open_log(default_env(), dir);
    log->set_batch_summarizer(counting_summarizer());
    for (int n : {2, 3, 4, 5}) append_n(*log, n);
  }
  // Keep the first two entries (40-byte header + "n2" / "n3").
  std::filesystem::resize_file(stats, 2 * (kSummaryEntryHeaderSize + 2) + 7);
  auto log = open_log(default_env(), dir);
  using V = std::vector<std::string>;
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2", "2:n3"}));
  log->set_batch_summarizer(counting_summarizer());
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2", "2:n3", "5:n4", "9:n5"}));
  append_n(*log, 6);  // continues after the valid prefix (the torn entry was cut)
  EXPECT_EQ(payloads(*log, 0), (V{"0:n2", "2:n3", "5:n4", "9:n5", "14:n6"}));
}

}  // namespace
}  // namespace strata::storage
