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

#include "pkindex/row_format.h"
#include "protocol/pk/change_headers.h"
#include "protocol/pk/partitioner.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"
#include "test/unit/pkindex/pk_write_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {

using namespace protocol::pk;  // wire facts: change headers, partitioners
namespace {

using protocol::Header;

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string str(std::span<const uint8_t> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

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
                                bool idempotent = false,
                                codec::Compression codec = codec::Compression::none) {
  protocol::RecordBatchBuilder bb(codec);
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
    auto w = testing::write_through(*state_, *log_, input, 1, out);
    last_errors_ = w.result.record_errors;
    if (!w.result.status.ok()) return w.result.status;
    EXPECT_EQ(w.result.appended.producer_check, storage::ProducerCheck::ok);
    return decode(w.batch);
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
  // A `none` record carries the whole row (the newest record of a key is its truth, which is
  // what log compaction keeps), and the row's offset/timestamp are those of its newest record.
  ASSERT_EQ((*r)[2].other_headers.count(std::string(kRowVersionHeader)), 1u);
  std::string ver_be;
  if (vers) {
    ver_be.resize(8);
    row_format::put_be64(reinterpret_cast<uint8_t*>(ver_be.data()), first ? 1 : 2);
  }
  EXPECT_EQ((*r)[2].other_headers.at(std::string(kRowVersionHeader)), ver_be);
  EXPECT_EQ((*r)[0].other_headers.count(std::string(kRowVersionHeader)), 0u);
  auto lk = state_->lookup(b("k"));
  EXPECT_EQ(lk->offset, 2);
  EXPECT_EQ(lk->timestamp, 1002);

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
    ::testing::Combine(
        ::testing::Values(MergeEngine::last_row, MergeEngine::first_row, MergeEngine::versioned),
        ::testing::Values(ChangelogImage::full, ChangelogImage::wal),
        ::testing::Values(DeleteBehavior::allow, DeleteBehavior::ignore, DeleteBehavior::disable)));

TEST_F(PkStateTest, VersionedTiesMissingAndMalformed) {
  TableConfig t;
  t.merge_engine = MergeEngine::versioned;
  t.version_header = "ver";
  open_all(t);
  auto r = write({{"k", "a", 5},
                  {"k", "b", 4},
                  {"k", "c", 5},
                  {"k", "d", std::nullopt},
                  {"k", "c", 5},
                  {"k", "c", 6},
                  {"n", "x", std::nullopt}});
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
  auto w = testing::write_through(*state_, *log_, input, 1);
  const WriteResult& res = w.result;
  ASSERT_EQ(res.status.code(), Errc::invalid_argument);
  ASSERT_EQ(res.record_errors.size(), 1u);
  EXPECT_EQ(res.record_errors[0].index, 1);
  const int32_t owner = partition_for_key(Partitioner::murmur2, b(other), 4);
  EXPECT_NE(res.record_errors[0].message.find("partition " + std::to_string(owner)),
            std::string::npos)
      << res.record_errors[0].message;
  EXPECT_EQ(state_->overlay_size(), 0u);
  EXPECT_TRUE(w.batch.empty());  // the append was never called
  EXPECT_EQ(log_->log_end_offset(), 0);
  auto ok = write({{mine, "v"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(get(mine), "v");
}

TEST_F(PkStateTest, OverlayChainsAndRollsBack) {
  open_all(TableConfig{});
  using testing::write_through;
  constexpr auto none = codec::Compression::none;
  auto in1 = make_input({{"k", "x"}}, "");
  auto in2 = make_input({{"k", "y"}}, "");
  auto in3 = make_input({{"k", "z"}}, "");
  // Batch 1 is appended but held: batch 2 sees it through the overlay.
  auto c1 = write_through(*state_, *log_, in1, 1, none, /*hold=*/true);
  ASSERT_TRUE(c1.ok());
  EXPECT_EQ(get("k"), std::nullopt);  // held: not applied
  auto c2 = write_through(*state_, *log_, in2, 1, none, true, /*fail_append=*/true);
  EXPECT_EQ(c2.result.status.code(), Errc::io_error);  // the append's own error
  EXPECT_EQ(state_->overlay_size(), 1u);               // batch 2 rolled back, batch 1 kept
  auto c3 = write_through(*state_, *log_, in3, 1, none, true);
  ASSERT_TRUE(c3.ok());
  auto o3 = decode(c3.batch);
  EXPECT_EQ(o3[0].kind, "update");  // sees batch 1 through the overlay
  EXPECT_EQ(o3[0].before, "x");
  EXPECT_EQ(state_->overlay_size(), 2u);
  // apply_at applies held batches up to an offset, oldest first.
  ASSERT_TRUE(state_->apply_at(c1.result.appended.last_offset).ok());
  EXPECT_EQ(state_->overlay_size(), 1u);
  EXPECT_EQ(get("k"), "x");
  EXPECT_EQ(state_->applied_offset(), c1.result.appended.last_offset);
  // A write that is not held applies everything before it too.
  auto c4 = write_through(*state_, *log_, in2, 1);
  ASSERT_TRUE(c4.ok());
  EXPECT_EQ(decode(c4.batch)[0].before, "z");
  EXPECT_EQ(state_->overlay_size(), 0u);
  EXPECT_EQ(get("k"), "y");
  EXPECT_EQ(state_->applied_offset(), log_->log_end_offset() - 1);
  // A failed append of an unheld write leaves the state as it was.
  auto c5 = write_through(*state_, *log_, in1, 1, none, false, true);
  EXPECT_FALSE(c5.result.status.ok());
  EXPECT_EQ(state_->overlay_size(), 0u);
  EXPECT_EQ(get("k"), "y");
}

TEST_F(PkStateTest, OversizedChangelogBatchIsRefusedBeforeTheAppend) {
  open_all(TableConfig{});
  auto input = make_input({{"k", std::string(1000, 'v')}}, "");
  WriteInput in{protocol::RecordBatchView(input)};
  in.max_batch_bytes = 500;
  bool appended = false;
  auto res = state_->write(in, state_->now_ms(), [&](std::span<uint8_t> b) {
    appended = true;
    return log_->append(b, 1);
  });
  EXPECT_EQ(res.status.code(), Errc::too_large);
  EXPECT_FALSE(appended);
  EXPECT_EQ(state_->overlay_size(), 0u);
  EXPECT_EQ(get("k"), std::nullopt);
}

// A client batch that fits max.message.bytes is taken even when its changelog does not (headers,
// before-images): librdkafka never splits a batch, so refusing it would fail a client writing
// small records at its default batch.size. Up to changelog_batch_limit(), that is.
TEST_F(PkStateTest, ChangelogOfABatchThatFitsMayOutgrowMaxMessageBytes) {
  TableConfig t;
  t.image = ChangelogImage::full;
  t.ttl_ms = 3'600'000;
  open_all(t);
  constexpr int64_t kMax = 64 * 1024;  // the topic's max.message.bytes
  std::vector<In> ins;
  for (int i = 0; ins.size() < 2000; ++i)
    ins.emplace_back(std::string("k").append(std::to_string(i)), "v1");
  auto inserts = make_input(ins, "");
  ASSERT_LE(inserts.size(), static_cast<size_t>(kMax)) << "the client's batch fits";
  for (auto& in : ins) in.value = "v2";
  auto updates = make_input(ins, "");
  ASSERT_LE(updates.size(), static_cast<size_t>(kMax));
  for (const auto* input : {&inserts, &updates}) {
    WriteInput in{protocol::RecordBatchView(*input)};
    in.max_batch_bytes = changelog_batch_limit(kMax);
    in.max_record_bytes = kMax;
    size_t out_bytes = 0;
    auto res = state_->write(in, state_->now_ms(), [&](std::span<uint8_t> b) {
      out_bytes = b.size();
      return log_->append(b, 1);
    });
    ASSERT_TRUE(res.status.ok()) << res.status.to_string();
    EXPECT_GT(out_bytes, static_cast<size_t>(kMax)) << "its changelog does not fit";
    EXPECT_LE(out_bytes, static_cast<size_t>(changelog_batch_limit(kMax)));
  }
  EXPECT_EQ(get("k1999"), "v2");
  EXPECT_EQ(changelog_batch_limit(1 << 20), 4 << 20);
  EXPECT_LE(changelog_batch_limit(std::numeric_limits<int32_t>::max()),
            std::numeric_limits<int32_t>::max())
      << "no overflow past int32";
}

// However high the limit, a changelog whose records outgrow what a reader decompresses is refused
// while it is computed: 70 small compressed deletes of 1 MiB rows would log 70 MiB of
// before-images, a batch replay and followers could not read back.
TEST_F(PkStateTest, ACompressedChangelogBeyondWhatReadersDecompressIsRefused) {
  TableConfig t;
  t.image = ChangelogImage::full;
  open_all(t);
  const std::string row(1u << 20, 'r');
  std::vector<In> deletes;
  for (int batch = 0; batch < 10; ++batch) {
    std::vector<In> ins;
    for (int i = 0; i < 7; ++i) {
      ins.emplace_back(std::string("k").append(std::to_string(batch * 7 + i)), row);
      deletes.emplace_back(std::string("k").append(std::to_string(batch * 7 + i)), std::nullopt);
    }
    auto input = make_input(ins, "", false, codec::Compression::gzip);
    WriteInput in{protocol::RecordBatchView(input), codec::Compression::gzip};
    auto res = state_->write(in, state_->now_ms(),
                             [&](std::span<uint8_t> b) { return log_->append(b, 1); });
    ASSERT_TRUE(res.status.ok()) << batch << ": " << res.status.to_string();
  }
  const int64_t end = log_->log_end_offset();
  auto input = make_input(deletes, "", false, codec::Compression::gzip);
  WriteInput in{protocol::RecordBatchView(input), codec::Compression::gzip};
  bool appended = false;
  auto res = state_->write(in, state_->now_ms(), [&](std::span<uint8_t> b) {
    appended = true;
    return log_->append(b, 1);
  });
  EXPECT_EQ(res.status.code(), Errc::too_large) << res.status.to_string();
  EXPECT_FALSE(appended);
  EXPECT_EQ(log_->log_end_offset(), end);
  EXPECT_EQ(state_->overlay_size(), 0u);
  EXPECT_EQ(get("k69")->size(), row.size()) << "nothing was deleted";
}

// max.message.bytes bounds each row as decompressed: a gzip batch of a few KiB carrying a 2 MiB
// value (or key, or headers) passes every batch-size check but is refused record by record, with
// nothing appended, applied or left in the overlay.
TEST_F(PkStateTest, RecordOverMaxRecordBytesIsRefusedBeforeTheAppend) {
  open_all(TableConfig{});
  const std::string big(2u << 20, 'z');
  const std::vector<std::vector<In>> inputs = {
      {{"a", std::string("small")}, {"b", big}},              // the value
      {{big, std::string("v")}},                              // the key
      {{"c", std::string("v"), std::nullopt, {{"h", big}}}},  // a header
  };
  const std::vector<int32_t> bad_index = {1, 0, 0};
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto input = make_input(inputs[i], "", false, codec::Compression::gzip);
    ASSERT_LT(input.size(), 64u * 1024) << "compressed far below the cap";
    WriteInput in{protocol::RecordBatchView(input), codec::Compression::gzip};
    in.max_batch_bytes = 1 << 20;
    in.max_record_bytes = 1 << 20;
    bool appended = false;
    auto res = state_->write(in, state_->now_ms(), [&](std::span<uint8_t> out) {
      appended = true;
      return log_->append(out, 1);
    });
    EXPECT_EQ(res.status.code(), Errc::too_large) << i << ": " << res.status.to_string();
    ASSERT_EQ(res.record_errors.size(), 1u) << i;
    EXPECT_EQ(res.record_errors[0].index, bad_index[i]);
    EXPECT_NE(res.record_errors[0].message.find("max.message.bytes"), std::string::npos)
        << res.record_errors[0].message;
    EXPECT_FALSE(appended) << i;
    EXPECT_EQ(state_->overlay_size(), 0u);
    EXPECT_EQ(log_->log_end_offset(), 0);
  }
  EXPECT_EQ(get("a"), std::nullopt);
  // A structural error in the same batch wins: INVALID_RECORD semantics (invalid_argument).
  {
    std::vector<In> ins = {{"d", big}, {"e", std::string("v")}};
    ins[1].null_key = true;
    auto input = make_input(ins, "");
    WriteInput in{protocol::RecordBatchView(input)};
    in.max_record_bytes = 1 << 20;
    auto res = state_->write(in, state_->now_ms(),
                             [&](std::span<uint8_t> out) { return log_->append(out, 1); });
    EXPECT_EQ(res.status.code(), Errc::invalid_argument) << res.status.to_string();
    EXPECT_EQ(res.record_errors.size(), 2u);
  }
  // At the cap exactly, a row is accepted.
  auto input = make_input({{"k", std::string((1 << 20) - 1, 'v')}}, "");
  WriteInput in{protocol::RecordBatchView(input)};
  in.max_record_bytes = 1 << 20;
  auto res = state_->write(in, state_->now_ms(),
                           [&](std::span<uint8_t> out) { return log_->append(out, 1); });
  EXPECT_TRUE(res.status.ok()) << res.status.to_string();
  EXPECT_EQ(get("k")->size(), (1u << 20) - 1);
}

TEST_F(PkStateTest, ApplyChangelogAppliesStoredAfterImagesOnce) {
  open_all(TableConfig{});
  // A leader's changelog (computed here) applied to a second, empty state as a follower would.
  auto w1 = testing::write_through(*state_, *log_, make_input({{"a", "1"}, {"b", "2"}}, ""), 1);
  auto w2 =
      testing::write_through(*state_, *log_, make_input({{"a", "1"}, {"b", std::nullopt}}, ""), 1);
  ASSERT_TRUE(w1.ok() && w2.ok());
  EXPECT_EQ(decode(w2.batch)[0].kind, "none");
  EXPECT_EQ(decode(w2.batch)[1].kind, "delete");
  auto log2 = storage::PartitionLog::open(storage::default_env(), tmp_.sub("t-1"), {}, 1);
  ASSERT_TRUE(log2.ok());
  auto follower = PkState::open(env_, **log2, options_);
  ASSERT_TRUE(follower.ok()) << follower.status().to_string();
  PkState& f = **follower;
  protocol::RecordBatchView b1(w1.batch), b2(w2.batch);
  ASSERT_TRUE(f.apply_changelog(b1, b1.base_offset()).ok());
  EXPECT_EQ(f.applied_offset(), 1);
  EXPECT_EQ(f.lookup(b("b"))->value, "2");
  ASSERT_TRUE(f.apply_changelog(b2, b2.base_offset()).ok());
  ASSERT_TRUE(f.apply_changelog(b1, b1.base_offset()).ok());  // again: already applied, no-op
  EXPECT_EQ(f.applied_offset(), 3);
  auto a = f.lookup(b("a"));
  ASSERT_TRUE(a->found);
  EXPECT_EQ(a->value, "1");
  EXPECT_EQ(a->offset, 2);  // the `none` at offset 2 carries the row: its newest record
  EXPECT_FALSE(f.lookup(b("b"))->found);
  ASSERT_TRUE(f.close().ok());
}

// Rows are written to RocksDB in key order (PkState::in_key_order); a key written several times in
// one batch must still end at its last record, with that record's offset — on the writer, on a
// follower applying the changelog, and after a replay of the log. Each key's first record reads
// the stored row, later ones the batch's own.
TEST_F(PkStateTest, AKeyWrittenSeveralTimesInOneBatchEndsAtItsLastRecord) {
  options_.flush_on_close = false;
  open_all(TableConfig{});
  // Every key stored first; then 2,500 records over 7 keys in scattered order (enough for an
  // unstable sort to reorder equal keys), every 5th a delete; the model is each key's last record.
  std::vector<In> stored;
  for (char k = 'a'; k < 'a' + 7; ++k) stored.push_back({std::string(1, k), "stored"});
  auto first = testing::write_through(*state_, *log_, make_input(stored, ""), 1);
  ASSERT_TRUE(first.ok());
  std::vector<In> batch;
  std::map<std::string, std::pair<std::optional<std::string>, int64_t>> model;
  for (int i = 0; i < 2500; ++i) {
    const std::string key(1, static_cast<char>('a' + (i * 5) % 7));
    std::optional<std::string> value;
    if (i % 5 != 4) value = std::to_string(i);
    batch.push_back({key, value});
    model[key] = {value, 7 + i};
  }
  auto w = testing::write_through(*state_, *log_, make_input(batch, ""), 1);
  ASSERT_TRUE(w.ok());
  const std::vector<Out> changes = decode(w.batch);
  ASSERT_EQ(changes.size(), batch.size());
  for (int i = 0; i < 7; ++i) {  // keys 0, 5, 3, 1, 6, 4, 2: each one's first write
    EXPECT_EQ(changes[i].kind, i % 5 == 4 ? "delete" : "update") << i;
    EXPECT_EQ(changes[i].before, "stored") << i;
  }
  auto log2 = storage::PartitionLog::open(storage::default_env(), tmp_.sub("t-1"), {}, 1);
  ASSERT_TRUE(log2.ok());
  auto follower = PkState::open(env_, **log2, options_);
  ASSERT_TRUE(follower.ok()) << follower.status().to_string();
  for (const auto* written : {&first, &w}) {
    protocol::RecordBatchView out(written->batch);
    ASSERT_TRUE((*follower)->apply_changelog(out, out.base_offset()).ok());
  }
  auto check = [&](PkState& s, const char* who) {
    SCOPED_TRACE(who);
    EXPECT_EQ(s.applied_offset(), 7 + 2499);
    for (const auto& [key, last] : model) {
      auto row = s.lookup(b(key));
      ASSERT_TRUE(row.ok());
      EXPECT_EQ(row->found, last.first.has_value()) << key;
      if (!last.first) continue;
      EXPECT_EQ(row->value, *last.first) << key;
      EXPECT_EQ(row->offset, last.second) << key;
    }
  };
  check(*state_, "writer");
  check(**follower, "follower");
  ASSERT_TRUE((*follower)->close().ok());
  ASSERT_TRUE(state_->close().ok());  // the memtable is lost: reopening replays the log
  state_.reset();
  open_all(TableConfig{});
  check(*state_, "replayed");
}

TEST_F(PkStateTest, OutputBatchKeepsProducerFieldsAndUsesTopicCodec) {
  open_all(TableConfig{});
  auto input = make_input({{"a", "1"}, {"b", "2"}, {"a", "3"}}, "", true);
  auto res = testing::write_through(*state_, *log_, input, 1, codec::Compression::zstd);
  ASSERT_TRUE(res.ok()) << res.result.status.to_string();
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
  auto res2 = testing::write_through(*state_, *log_, lat, 1);
  ASSERT_TRUE(res2.ok());
  protocol::RecordBatchView out2(res2.batch);
  EXPECT_EQ(out2.validate(), protocol::BatchCheck::ok);
  EXPECT_EQ(out2.timestamp_type(), protocol::TimestampType::log_append_time);
  EXPECT_EQ(out2.max_timestamp(), 777777);
}

TEST_F(PkStateTest, IdempotentDuplicateIsRolledBackNotAppliedTwice) {
  open_all(TableConfig{});
  auto input = make_input({{"k", "v1"}}, "", true);  // producer 4242, epoch 3, sequence 17
  auto c1 = testing::write_through(*state_, *log_, input, 1);
  ASSERT_TRUE(c1.ok());
  const auto& a1 = c1.result.appended;
  // The retry: computed again (now an "update"... of identical bytes -> none), but the log says
  // duplicate, so write() rolls back and the state and log stay as they were.
  auto c2 = testing::write_through(*state_, *log_, input, 1);
  ASSERT_TRUE(c2.result.status.ok());
  const auto& a2 = c2.result.appended;
  EXPECT_EQ(a2.producer_check, storage::ProducerCheck::duplicate);
  EXPECT_EQ(a2.base_offset, a1.base_offset);
  EXPECT_EQ(state_->overlay_size(), 0u);
  EXPECT_EQ(log_->log_end_offset(), 1);
  EXPECT_EQ(state_->applied_offset(), 0);
  EXPECT_EQ(get("k"), "v1");
}

TEST_F(PkStateTest, PrefixLookupPagesReturnEachRowOnce) {
  open_all(TableConfig{});
  std::vector<In> ins;
  for (int i = 0; i < 250; ++i)
    ins.emplace_back("a-" + std::to_string(1000 + i), "va" + std::to_string(i));
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
  EXPECT_EQ(c->offset, 5);  // the "none" at offset 5 is the key's newest record, replayed too
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
