// PkState end to end over a real PartitionLog: compute -> append -> apply for every merge engine x
// image mode x delete behaviour, overlay rollback, rejections, routing, encoding of the output
// batch, recovery by replay, and the log-first flush listener.
#include "pkindex/pk_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "pkindex/change_headers.h"
#include "pkindex/partitioner.h"
#include "pkindex/row_format.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

using protocol::Header;

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string str(std::span<const uint8_t> s) { return {reinterpret_cast<const char*>(s.data()), s.size()}; }

struct In {
  In(std::string k, std::optional<std::string> v, std::optional<int64_t> ver = std::nullopt,
     std::vector<std::pair<std::string, std::string>> h = {})
      : key(std::move(k)), value(std::move(v)), version(ver), headers(std::move(h)) {}
  std::string key;
  std::optional<std::string> value;
  std::optional<int64_t> version;
  std::vector<std::pair<std::string, std::string>> headers;
  bool null_key = false;
};

struct Out {
  std::string key;
  std::optional<std::string> value;
  std::string kind;
  std::optional<std::string> before;
  std::map<std::string, std::string> other_headers;
  int64_t offset;
};

std::vector<uint8_t> make_input(const std::vector<In>& ins, const std::string& version_header,
                                bool idempotent = false) {
  protocol::RecordBatchBuilder bb;
  if (idempotent) bb.set_producer(4242, 3, 17);
  std::vector<std::string> keep;
  keep.reserve(ins.size() * 4);
  int64_t ts = 1000;
  for (const auto& in : ins) {
    std::vector<Header> hs;
    for (const auto& [k, v] : in.headers) {
      keep.push_back(v);
      hs.push_back(Header{k, b(keep.back())});
    }
    if (in.version) {
      std::string v(8, '\0');
      row_format::put_be64(reinterpret_cast<uint8_t*>(v.data()), *in.version);
      keep.push_back(v);
      hs.push_back(Header{version_header, b(keep.back())});
    }
    std::optional<std::span<const uint8_t>> value;
    if (in.value) value = b(*in.value);
    std::optional<std::span<const uint8_t>> key;
    if (!in.null_key) key = b(in.key);
    bb.add(ts++, key, value, hs);
  }
  return bb.build();
}

std::vector<Out> decode(std::span<const uint8_t> batch) {
  protocol::RecordBatchView v(batch);
  EXPECT_EQ(v.validate(), protocol::BatchCheck::ok);
  auto r = protocol::RecordReader::open(v);
  EXPECT_TRUE(r.ok());
  std::vector<Out> outs;
  protocol::Record rec;
  while (*r->next(rec)) {
    Out o;
    o.key = rec.key ? str(*rec.key) : "";
    if (rec.value) o.value = str(*rec.value);
    o.offset = r->offset_of(rec);
    auto it = rec.headers();
    Header h;
    while (it.next(h)) {
      std::string val = h.value ? str(*h.value) : "";
      if (h.key == kChangeHeader) {
        o.kind = val;
      } else if (h.key == kBeforeHeader) {
        o.before = val;
      } else {
        o.other_headers[std::string(h.key)] = val;
      }
    }
    outs.push_back(o);
  }
  return outs;
}

class PkStateTest : public ::testing::Test {
 protected:
  void open_all(TableConfig table, int32_t partition = 0, int32_t count = 1) {
    options_.table = table;
    options_.partition = partition;
    options_.partition_count = count;
    if (!log_) {
      auto log = storage::PartitionLog::open(storage::default_env(), tmp_.sub("t-0"), {}, 1);
      ASSERT_TRUE(log.ok()) << log.status().to_string();
      log_ = std::move(*log);
    }
    auto s = PkState::open(env_, *log_, options_);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    state_ = std::move(*s);
  }
  // compute -> append -> apply; returns the decoded output, or the compute error.
  Result<std::vector<Out>> write(const std::vector<In>& ins,
                                 codec::Compression out = codec::Compression::none) {
    auto input = make_input(ins, options_.table.version_header);
    auto lk = state_->lock_writes();
    auto res = state_->compute(protocol::RecordBatchView(input), out);
    if (!res.status.ok()) return res.status;
    last_errors_ = res.record_errors;
    auto app = log_->append(res.batch, 1);
    if (!app.ok()) return app.status();
    EXPECT_EQ(app->producer_check, storage::ProducerCheck::ok);
    STRATA_RETURN_IF_ERROR(state_->apply(res.pending_id, app->base_offset));
    return decode(res.batch);
  }
  std::optional<std::string> get(const std::string& key) {
    auto r = state_->lookup(b(key));
    EXPECT_TRUE(r.ok());
    if (!r->found) return std::nullopt;
    return r->value;
  }

  storage::testing::TempDir tmp_;
  PkEnvironment env_;
  std::unique_ptr<storage::PartitionLog> log_;
  PkState::Options options_;
  std::unique_ptr<PkState> state_;
  std::vector<RecordError> last_errors_;
};

// --- Every merge engine x image mode x delete behaviour ---

using Combo = std::tuple<MergeEngine, ChangelogImage, DeleteBehavior>;
class PkMatrix : public PkStateTest, public ::testing::WithParamInterface<Combo> {};

TEST_P(PkMatrix, ChangeKindsAndImages) {
  auto [engine, image, del] = GetParam();
  TableConfig t;
  t.merge_engine = engine;
  t.image = image;
  t.delete_behavior = del;
  if (engine == MergeEngine::versioned) t.version_header = "ver";
  open_all(t);
  const bool full = image == ChangelogImage::full;
  const bool vers = engine == MergeEngine::versioned;
  auto V = [&](int64_t v) { return vers ? std::optional<int64_t>(v) : std::nullopt; };

  // One batch: insert, same-batch overwrite, identical write, plus a client header kept as is.
  auto r = write({{"k", "a", V(1), {{"app", "x"}}}, {"k", "b", V(2)}, {"k", "b", V(2)}});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].kind, "insert");
  EXPECT_EQ((*r)[0].value, "a");
  EXPECT_EQ((*r)[0].other_headers.at("app"), "x");
  EXPECT_FALSE((*r)[0].before);
  EXPECT_EQ((*r)[0].offset, 0);
  EXPECT_EQ((*r)[2].offset, 2);
  const bool first = engine == MergeEngine::first_row;
  EXPECT_EQ((*r)[1].kind, first ? "none" : "update");
  EXPECT_EQ((*r)[1].value, first ? "a" : "b");
  if (!first && full) {
    EXPECT_EQ((*r)[1].before, "a");
  } else {
    EXPECT_FALSE((*r)[1].before);
  }
  EXPECT_EQ((*r)[2].kind, "none");  // identical bytes (first_row: ignored)
  EXPECT_FALSE((*r)[2].before);
  const std::string cur = first ? "a" : "b";
  EXPECT_EQ(get("k"), cur);
  auto lk = state_->lookup(b("k"));
  EXPECT_EQ(lk->offset, first ? 0 : 1);
  EXPECT_EQ(lk->timestamp, first ? 1000 : 1001);

  // Delete of an existing key.
  auto d = write({{"k", std::nullopt, V(3)}});
  if (del == DeleteBehavior::disable) {
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), Errc::invalid_argument);
    EXPECT_EQ(state_->overlay_size(), 0u);
    EXPECT_EQ(log_->log_end_offset(), 3);  // nothing appended
    EXPECT_EQ(get("k"), cur);
    return;
  }
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  ASSERT_EQ(d->size(), 1u);
  if (del == DeleteBehavior::allow) {
    EXPECT_EQ((*d)[0].kind, "delete");
    EXPECT_FALSE((*d)[0].value);
    if (full) {
      EXPECT_EQ((*d)[0].before, cur);
    } else {
      EXPECT_FALSE((*d)[0].before);
    }
    EXPECT_EQ(get("k"), std::nullopt);
    // Deleting an absent key changes nothing.
    auto d2 = write({{"k", std::nullopt, V(4)}});
    ASSERT_TRUE(d2.ok());
    EXPECT_EQ((*d2)[0].kind, "none");
    EXPECT_FALSE((*d2)[0].value);
    // Re-insert after delete is an insert.
    auto again = write({{"k", "c", V(5)}});
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)[0].kind, "insert");
  } else {
    EXPECT_EQ((*d)[0].kind, "none");
    EXPECT_EQ((*d)[0].value, cur);  // the row after = unchanged row
    EXPECT_EQ(get("k"), cur);
  }
  EXPECT_EQ(state_->applied_offset(), log_->log_end_offset() - 1);
}

INSTANTIATE_TEST_SUITE_P(
    AllCombos, PkMatrix,
    ::testing::Combine(::testing::Values(MergeEngine::last_row, MergeEngine::first_row,
                                         MergeEngine::versioned),
                       ::testing::Values(ChangelogImage::full, ChangelogImage::wal),
                       ::testing::Values(DeleteBehavior::allow, DeleteBehavior::ignore,
                                         DeleteBehavior::disable)));

TEST_F(PkStateTest, VersionedTiesMissingAndMalformed) {
  TableConfig t;
  t.merge_engine = MergeEngine::versioned;
  t.version_header = "ver";
  open_all(t);
  auto r = write({{"k", "a", 5}, {"k", "b", 4}, {"k", "c", 5}, {"k", "d", std::nullopt},
                  {"k", "c", 5}, {"k", "c", 6}, {"n", "x", std::nullopt}});
  ASSERT_TRUE(r.ok());
  std::vector<std::string> kinds;
  for (auto& o : *r) kinds.push_back(o.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"insert", "none", "update", "none", "none", "update",
                                             "none"}));
  EXPECT_EQ((*r)[1].value, "a");
  EXPECT_EQ((*r)[2].before, "a");
  EXPECT_FALSE((*r)[6].value);  // ignored insert without version: key stays absent
  EXPECT_EQ(get("k"), "c");
  EXPECT_EQ(get("n"), std::nullopt);

  // A malformed version (4 bytes) rejects the whole batch, naming the record.
  auto bad = write({{"k", "z", 9}, {"k", "y", std::nullopt, {{"ver", "abcd"}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ver"), std::string::npos);
  EXPECT_EQ(get("k"), "c");
  EXPECT_EQ(state_->overlay_size(), 0u);

  // After a restart (replay of after-images) the stored version still decides.
  ASSERT_TRUE(state_->close().ok());
  std::filesystem::remove_all(tmp_.sub("t-0/kv"));
  open_all(t);
  auto after = write({{"k", "lower", 5}, {"k", "tie", 6}});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].kind, "none");
  EXPECT_EQ((*after)[1].kind, "update");
}

TEST_F(PkStateTest, RejectsSpoofedHeadersMissingKeysAndMisroutedKeys) {
  TableConfig t;
  open_all(t, 1, 4);
  // Find keys owned / not owned by partition 1 under murmur2.
  std::string mine, other;
  for (int i = 0; mine.empty() || other.empty(); ++i) {
    std::string k = "key-" + std::to_string(i);
    (partition_for_key(Partitioner::murmur2, b(k), 4) == 1 ? mine : other) = k;
  }
  auto spoof = write({{mine, "v", std::nullopt, {{"strata.change", "delete"}}}});
  ASSERT_FALSE(spoof.ok());
  EXPECT_NE(spoof.status().message().find("strata.change"), std::string::npos);

  In nokey{"", "v"};
  nokey.null_key = true;
  auto nk = write({{mine, "v"}, nokey});
  ASSERT_FALSE(nk.ok());
  EXPECT_NE(nk.status().message().find("key"), std::string::npos);

  auto input = make_input({{mine, "v"}, {other, "w"}}, "");
  auto lk = state_->lock_writes();
  auto res = state_->compute(protocol::RecordBatchView(input), codec::Compression::none);
  ASSERT_EQ(res.status.code(), Errc::invalid_argument);
  ASSERT_EQ(res.record_errors.size(), 1u);
  EXPECT_EQ(res.record_errors[0].index, 1);
  const int32_t owner = partition_for_key(Partitioner::murmur2, b(other), 4);
  EXPECT_NE(res.record_errors[0].message.find("partition " + std::to_string(owner)),
            std::string::npos)
      << res.record_errors[0].message;
  EXPECT_EQ(state_->overlay_size(), 0u);
  lk.unlock();
  EXPECT_EQ(log_->log_end_offset(), 0);
  auto ok = write({{mine, "v"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(get(mine), "v");
}

TEST_F(PkStateTest, OverlayChainsAndRollsBack) {
  open_all(TableConfig{});
  auto lk = state_->lock_writes();
  auto in1 = make_input({{"k", "x"}}, "");
  auto c1 = state_->compute(protocol::RecordBatchView(in1), codec::Compression::none);
  ASSERT_TRUE(c1.status.ok());
  auto in2 = make_input({{"k", "y"}}, "");
  auto c2 = state_->compute(protocol::RecordBatchView(in2), codec::Compression::none);
  ASSERT_TRUE(c2.status.ok());
  auto o2 = decode(c2.batch);
  EXPECT_EQ(o2[0].kind, "update");  // sees batch 1 through the overlay
  EXPECT_EQ(o2[0].before, "x");
  EXPECT_EQ(state_->overlay_size(), 2u);
  // The append of batch 1 failed: batch 1 and everything computed on top of it go.
  state_->rollback(c1.pending_id);
  EXPECT_EQ(state_->overlay_size(), 0u);
  auto in3 = make_input({{"k", "z"}}, "");
  auto c3 = state_->compute(protocol::RecordBatchView(in3), codec::Compression::none);
  ASSERT_TRUE(c3.status.ok());
  EXPECT_EQ(decode(c3.batch)[0].kind, "insert");
  auto app = log_->append(c3.batch, 1);
  ASSERT_TRUE(app.ok());
  ASSERT_TRUE(state_->apply(c3.pending_id, app->base_offset).ok());
  lk.unlock();
  EXPECT_EQ(get("k"), "z");
  // A rollback of the newest entry keeps older ones.
  lk.lock();
  auto a = state_->compute(protocol::RecordBatchView(in1), codec::Compression::none);
  auto bb = state_->compute(protocol::RecordBatchView(in2), codec::Compression::none);
  state_->rollback(bb.pending_id);
  EXPECT_EQ(state_->overlay_size(), 1u);
  EXPECT_FALSE(state_->apply(bb.pending_id, 1).ok());  // gone
  EXPECT_TRUE(state_->apply(a.pending_id, log_->append(a.batch, 1)->base_offset).ok());
  lk.unlock();
  EXPECT_EQ(get("k"), "x");
}

TEST_F(PkStateTest, OutputBatchKeepsProducerFieldsAndUsesTopicCodec) {
  open_all(TableConfig{});
  auto input = make_input({{"a", "1"}, {"b", "2"}, {"a", "3"}}, "", true);
  auto lk = state_->lock_writes();
  auto res = state_->compute(protocol::RecordBatchView(input), codec::Compression::zstd);
  ASSERT_TRUE(res.status.ok());
  protocol::RecordBatchView in(input), out(res.batch);
  EXPECT_EQ(out.validate(), protocol::BatchCheck::ok);
  EXPECT_EQ(out.compression(), codec::Compression::zstd);
  EXPECT_EQ(out.producer_id(), 4242);
  EXPECT_EQ(out.producer_epoch(), 3);
  EXPECT_EQ(out.base_sequence(), 17);
  EXPECT_EQ(out.record_count(), 3);
  EXPECT_EQ(out.last_offset_delta(), in.last_offset_delta());
  EXPECT_EQ(out.base_timestamp(), in.base_timestamp());
  EXPECT_EQ(out.max_timestamp(), in.max_timestamp());
  EXPECT_EQ(out.timestamp_type(), protocol::TimestampType::create_time);
  auto o = decode(res.batch);
  EXPECT_EQ(o[2].kind, "update");
  EXPECT_EQ(o[2].before, "1");

  // LogAppendTime input stays LogAppendTime with the same max timestamp.
  auto lat = make_input({{"c", "1"}}, "");
  protocol::set_log_append_time(lat, 777777);
  auto res2 = state_->compute(protocol::RecordBatchView(lat), codec::Compression::none);
  ASSERT_TRUE(res2.status.ok());
  protocol::RecordBatchView out2(res2.batch);
  EXPECT_EQ(out2.validate(), protocol::BatchCheck::ok);
  EXPECT_EQ(out2.timestamp_type(), protocol::TimestampType::log_append_time);
  EXPECT_EQ(out2.max_timestamp(), 777777);
}

TEST_F(PkStateTest, IdempotentDuplicateIsRolledBackNotAppliedTwice) {
  open_all(TableConfig{});
  auto input = make_input({{"k", "v1"}}, "", true);  // producer 4242, epoch 3, sequence 17
  auto lk = state_->lock_writes();
  auto c1 = state_->compute(protocol::RecordBatchView(input), codec::Compression::none);
  ASSERT_TRUE(c1.status.ok());
  auto a1 = log_->append(c1.batch, 1);
  ASSERT_TRUE(a1.ok());
  ASSERT_EQ(a1->producer_check, storage::ProducerCheck::ok);
  ASSERT_TRUE(state_->apply(c1.pending_id, a1->base_offset).ok());
  // The retry: computed again (now an "update"... of identical bytes -> none), but the log says
  // duplicate, so the caller rolls back and the state and log stay as they were.
  auto c2 = state_->compute(protocol::RecordBatchView(input), codec::Compression::none);
  ASSERT_TRUE(c2.status.ok());
  auto a2 = log_->append(c2.batch, 1);
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(a2->producer_check, storage::ProducerCheck::duplicate);
  EXPECT_EQ(a2->base_offset, a1->base_offset);
  state_->rollback(c2.pending_id);
  EXPECT_EQ(state_->overlay_size(), 0u);
  lk.unlock();
  EXPECT_EQ(log_->log_end_offset(), 1);
  EXPECT_EQ(state_->applied_offset(), 0);
  EXPECT_EQ(get("k"), "v1");
}

TEST_F(PkStateTest, PrefixLookupPagesReturnEachRowOnce) {
  open_all(TableConfig{});
  std::vector<In> ins;
  for (int i = 0; i < 250; ++i) ins.emplace_back("a-" + std::to_string(1000 + i), "va" + std::to_string(i));
  for (int i = 0; i < 50; ++i) ins.emplace_back("b-" + std::to_string(i), "vb");
  ASSERT_TRUE(write(ins).ok());
  ASSERT_TRUE(write({{"a-1007", std::nullopt}}).ok());  // deleted rows are not returned
  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  do {
    std::optional<std::span<const uint8_t>> c;
    if (cursor) c = b(*cursor);
    auto page = state_->prefix_lookup(b("a-"), c, 100);
    ASSERT_TRUE(page.ok());
    for (auto& r : page->rows) {
      seen.push_back(r.key);
      EXPECT_EQ(r.value, "va" + std::to_string(std::stoi(r.key.substr(2)) - 1000));
      EXPECT_EQ(r.offset, std::stoi(r.key.substr(2)) - 1000);
    }
    cursor = page->next_cursor;
    ++pages;
  } while (cursor);
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), 249u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "a-1007"), 0);
  auto all = state_->prefix_lookup(b(""), std::nullopt, 1000);
  EXPECT_EQ(all->rows.size(), 299u);
  EXPECT_FALSE(all->next_cursor);
  EXPECT_TRUE(state_->prefix_lookup(b("zz"), std::nullopt, 10)->rows.empty());
  auto exact = state_->prefix_lookup(b("b-"), std::nullopt, 50);
  EXPECT_EQ(exact->rows.size(), 50u);
  EXPECT_FALSE(exact->next_cursor);  // exactly `limit` rows and nothing more
  // A cursor below the prefix range starts at the range.
  EXPECT_EQ(state_->prefix_lookup(b("b-"), b("a"), 5)->rows.front().key, "b-0");
}

// --- Recovery and log-first ---

TEST_F(PkStateTest, ReplayRebuildsFromTheLogAfterLosingTheMemtable) {
  options_.flush_on_close = false;
  open_all(TableConfig{});
  ASSERT_TRUE(write({{"a", "1"}, {"b", "1"}}).ok());
  ASSERT_TRUE(state_->flush().ok());  // persists rows up to offset 1; fsyncs the log first
  EXPECT_GE(state_->log_syncs(), 1u);
  EXPECT_EQ(state_->log_sync_failures(), 0u);
  EXPECT_EQ(log_->recovery_point(), log_->log_end_offset());
  ASSERT_TRUE(write({{"a", "2"}, {"c", "1"}}).ok());
  ASSERT_TRUE(write({{"b", std::nullopt}, {"c", "1"}, {"d", "9"}}).ok());
  ASSERT_TRUE(state_->close().ok());  // crash: the memtable (offsets 2-6) is lost
  state_.reset();

  options_.flush_on_close = true;
  open_all(TableConfig{});
  EXPECT_EQ(state_->applied_offset(), 6);
  EXPECT_EQ(get("a"), "2");
  EXPECT_EQ(get("b"), std::nullopt);
  EXPECT_EQ(get("c"), "1");
  EXPECT_EQ(get("d"), "9");
  auto c = state_->lookup(b("c"));
  EXPECT_EQ(c->offset, 3);  // the "none" at offset 5 is not a change
  // Writes continue where replay stopped.
  auto r = write({{"d", "10"}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].kind, "update");
  EXPECT_EQ((*r)[0].before, "9");
}

TEST_F(PkStateTest, StateAheadOfTheLogIsRebuiltFromTheLog) {
  open_all(TableConfig{});
  ASSERT_TRUE(write({{"a", "1"}}).ok());
  ASSERT_TRUE(state_->close().ok());
  state_.reset();
  // A fresh, shorter log (the torn tail case): the state claims offset 0 but the log is empty.
  log_.reset();
  std::filesystem::rename(tmp_.sub("t-0/kv"), tmp_.sub("kv-saved"));
  std::filesystem::remove_all(tmp_.sub("t-0"));
  std::filesystem::create_directories(tmp_.sub("t-0"));
  std::filesystem::rename(tmp_.sub("kv-saved"), tmp_.sub("t-0/kv"));
  open_all(TableConfig{});
  EXPECT_EQ(state_->applied_offset(), -1);
  EXPECT_EQ(get("a"), std::nullopt);
}

}  // namespace
}  // namespace strata::pkindex
