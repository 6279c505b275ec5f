// Scan snapshots (pkindex/pk_scan.h) and changelog decoding (pkindex/changelog_decode.h) over a
// real PartitionLog + PkState: paging over a pinned snapshot while writes continue, snapshot
// release on close, TTL-expired rows hidden, and typed changes of full / wal image batches
// (plain and compressed, from an offset inside a batch).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "pkindex/changelog_decode.h"
#include "pkindex/pk_scan.h"
#include "pkindex/pk_state.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"
#include "test/unit/pkindex/pk_write_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string str(std::span<const uint8_t> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}
std::string key_of(int i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "k%05d", i);
  return buf;
}

class PkReadsTest : public ::testing::Test {
 protected:
  void open(ChangelogImage image = ChangelogImage::full, int64_t ttl_ms = -1) {
    auto log = storage::PartitionLog::open(storage::default_env(), tmp_.sub("t-0"), {}, 1);
    ASSERT_TRUE(log.ok()) << log.status().to_string();
    log_ = std::move(*log);
    PkState::Options o;
    o.table.image = image;
    o.table.ttl_ms = ttl_ms;
    o.clock = [this] { return now_; };
    auto s = PkState::open(env_, *log_, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    state_ = std::move(*s);
  }
  // Writes one batch of upserts (value) / deletes (nullopt); returns its base offset.
  int64_t write(const std::vector<std::pair<std::string, std::optional<std::string>>>& recs,
                codec::Compression c = codec::Compression::none) {
    protocol::RecordBatchBuilder bb;
    for (const auto& [k, v] : recs) {
      std::optional<std::span<const uint8_t>> val;
      if (v) val = b(*v);
      bb.add(now_, b(k), val, {});
    }
    auto input = bb.build();
    auto w = testing::write_through(*state_, *log_, input, now_, c);
    EXPECT_TRUE(w.ok()) << w.result.status.to_string();
    return w.result.appended.base_offset;
  }
  // All changes from `from` to the high watermark, through decode_changes.
  std::vector<std::string> changes(int64_t from) {
    std::vector<std::string> out;
    auto read = log_->read(from, 1 << 20, true, log_->high_watermark());
    EXPECT_TRUE(read.ok());
    protocol::RecordReader reader;
    std::vector<ChangeView> cv;
    for (const auto& range : read->ranges) {
      std::vector<uint8_t> buf(range.size);
      EXPECT_TRUE(range.file->read(range.position, range.size, buf.data()).ok());
      std::span<const uint8_t> rest(buf);
      while (!rest.empty()) {
        size_t n = protocol::peek_batch_size(rest);
        protocol::RecordBatchView batch(rest.first(n));
        rest = rest.subspan(n);
        cv.clear();
        EXPECT_TRUE(decode_changes(reader, batch, from, cv).ok());
        for (const auto& c : cv) {
          std::string s = std::to_string(c.offset) + ":" + std::string(change_kind_name(c.kind)) +
                          ":" + str(c.key);
          s += c.before ? "|b=" + str(*c.before) : "|b-";
          s += c.after ? "|a=" + str(*c.after) : "|a-";
          out.push_back(s);
        }
      }
    }
    return out;
  }

  storage::testing::TempDir tmp_;
  PkEnvironment env_;
  std::unique_ptr<storage::PartitionLog> log_;
  std::unique_ptr<PkState> state_;
  int64_t now_ = 1000000;
};

TEST_F(PkReadsTest, ScanPagesOverSnapshotWhileWritesContinue) {
  open();
  for (int i = 0; i < 500; i += 50) {
    std::vector<std::pair<std::string, std::optional<std::string>>> recs;
    for (int j = i; j < i + 50; ++j) recs.emplace_back(key_of(j), "v0-" + std::to_string(j));
    write(recs);
  }
  const int64_t x_expected = log_->high_watermark();
  ASSERT_EQ(x_expected, 500);
  auto snap = state_->open_snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ((*snap)->snapshot_offset(), x_expected);
  EXPECT_EQ(state_->open_snapshots(), 1u);

  std::vector<std::string> seen;
  std::optional<std::string> after;
  int pages = 0;
  for (;;) {
    std::optional<std::span<const uint8_t>> a;
    if (after) a = b(*after);
    auto page = state_->scan(**snap, a, 37, 1 << 20);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    ++pages;
    for (const auto& r : page->rows) {
      // Rows as of the snapshot: the original value, offsets below X.
      EXPECT_EQ(r.value, "v0-" + std::to_string(std::stoi(r.key.substr(1))));
      EXPECT_LT(r.offset, x_expected);
      seen.push_back(r.key);
    }
    // Writes after X between pages: updates, deletes and new keys must stay invisible.
    write({{key_of(pages * 3), "changed"},
           {key_of(pages * 3 + 1), std::nullopt},
           {"k9" + std::to_string(pages), "new"}});
    if (!page->more) break;
    ASSERT_FALSE(page->rows.empty());
    after = page->rows.back().key;
  }
  EXPECT_EQ(pages, (500 + 36) / 37);
  ASSERT_EQ(seen.size(), 500u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(seen[i], key_of(i));  // each once, key order
  // A new snapshot sees the later writes and a later X.
  auto snap2 = state_->open_snapshot();
  ASSERT_TRUE(snap2.ok());
  EXPECT_EQ((*snap2)->snapshot_offset(), log_->high_watermark());
  auto p2 = state_->scan(**snap2, std::nullopt, 10000, 1 << 30);
  ASSERT_TRUE(p2.ok());
  EXPECT_FALSE(p2->more);
  EXPECT_EQ(p2->rows.size(), 500u);  // `pages` deletes and `pages` new keys
  snap2->reset();
  EXPECT_EQ(state_->open_snapshots(), 1u);
}

TEST_F(PkReadsTest, MaxBytesIsASoftCapWithAtLeastOneRow) {
  open();
  write({{"a", std::string(100, 'x')}, {"b", std::string(100, 'y')}, {"c", "z"}});
  auto snap = state_->open_snapshot();
  ASSERT_TRUE(snap.ok());
  auto p = state_->scan(**snap, std::nullopt, 100, 1);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->rows.size(), 1u);
  EXPECT_TRUE(p->more);
  p = state_->scan(**snap, b("a"), 100, 150);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->rows.size(), 2u);  // b (101 bytes) then c: 101 < 150 so c is added
  EXPECT_FALSE(p->more);
  // An empty table: one empty last page at X = 0 for a fresh state.
}

TEST_F(PkReadsTest, EmptyStateSnapshotIsAtZero) {
  open();
  auto snap = state_->open_snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_EQ((*snap)->snapshot_offset(), 0);
  auto p = state_->scan(**snap, std::nullopt, 10, 100);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->rows.empty());
  EXPECT_FALSE(p->more);
}

TEST_F(PkReadsTest, CloseReleasesSnapshotsAndLaterScansFail) {
  open();
  write({{"a", "1"}, {"b", "2"}});
  auto snap = state_->open_snapshot();
  ASSERT_TRUE(snap.ok());
  EXPECT_FALSE((*snap)->released());
  ASSERT_TRUE(state_->close().ok());  // would fail/abort with an unreleased RocksDB snapshot
  EXPECT_TRUE((*snap)->released());
  auto p = state_->scan(**snap, std::nullopt, 10, 100);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Errc::not_found);
  state_.reset();  // the snapshot outlives its state safely
  snap->reset();
}

TEST_F(PkReadsTest, ScanNeverReturnsTtlExpiredRows) {
  open(ChangelogImage::full, /*ttl_ms=*/1000);
  write({{"old", "1"}});
  now_ += 600;
  write({{"new", "2"}});
  now_ += 600;  // "old" is 1200 ms old: expired; "new" 600 ms: alive
  auto snap = state_->open_snapshot();
  ASSERT_TRUE(snap.ok());
  auto p = state_->scan(**snap, std::nullopt, 1, 100);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->rows.size(), 1u);
  EXPECT_EQ(p->rows[0].key, "new");
  EXPECT_FALSE(p->more);
}

TEST_F(PkReadsTest, DecodeFullImageChanges) {
  open(ChangelogImage::full);
  write({{"a", "1"}, {"b", "1"}});
  write({{"a", "2"}, {"a", "2"}, {"b", std::nullopt}, {"zz", std::nullopt}},
        codec::Compression::lz4);
  const std::vector<std::string> want = {
      "0:insert:a|b-|a=1", "1:insert:b|b-|a=1", "2:update:a|b=1|a=2",
      // offset 3: identical write -> none; offset 5: delete of a missing key -> none
      "4:delete:b|b=1|a-"};
  EXPECT_EQ(changes(0), want);
  // From inside the compressed batch: earlier records are skipped.
  EXPECT_EQ(changes(3), std::vector<std::string>({"4:delete:b|b=1|a-"}));
  EXPECT_EQ(changes(5), std::vector<std::string>{});
}

TEST_F(PkReadsTest, DecodeWalImageChangesHaveNoBefore) {
  open(ChangelogImage::wal);
  write({{"a", "1"}});
  write({{"a", "2"}, {"a", std::nullopt}}, codec::Compression::zstd);
  EXPECT_EQ(changes(0), std::vector<std::string>(
                            {"0:insert:a|b-|a=1", "1:update:a|b-|a=2", "2:delete:a|b-|a-"}));
}

TEST(ChangelogDecode, CorruptBatchIsAnErrorNotACrash) {
  protocol::RecordBatchBuilder bb;
  std::string k = "key", v = "value";
  bb.add(1, b(k), b(v), {});
  auto bytes = bb.build();
  bytes.resize(bytes.size() - 3);  // cut records short
  const uint32_t len = static_cast<uint32_t>(bytes.size() - 12);
  bytes[8] = static_cast<uint8_t>(len >> 24);
  bytes[9] = static_cast<uint8_t>(len >> 16);
  bytes[10] = static_cast<uint8_t>(len >> 8);
  bytes[11] = static_cast<uint8_t>(len);
  protocol::RecordReader reader;
  std::vector<ChangeView> out;
  Status st = decode_changes(reader, protocol::RecordBatchView(bytes), 0, out);
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace strata::pkindex
