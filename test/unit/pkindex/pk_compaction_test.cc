// A primary-key table's log stays a correct changelog after log compaction: random writes
// (upserts, identical writes and ignored writes that log `none`, deletes, lower versions, TTL
// expiry) go through PkState::write; a copy of the log is compacted by storage's LogCleaner (only
// the newest record per key survives, tombstones go) and a state rebuilt from that log alone must
// equal the live one — every key's lookup, and the outcome of further writes (which exposes row
// versions and TTL clocks that lookups do not show).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "pkindex/pk_environment.h"
#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/env.h"
#include "storage/log_cleaner.h"
#include "storage/partition_log.h"
#include "test/unit/pkindex/pk_write_util.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

namespace fs = std::filesystem;

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
std::string name(char prefix, int64_t n) {  // no operator+ (GCC 12 -Wrestrict false positive)
  std::string s(1, prefix);
  s.append(std::to_string(n));
  return s;
}

struct In {
  std::string key;
  std::optional<std::string> value;  // nullopt = delete
  std::optional<int64_t> version;
};

std::vector<uint8_t> batch_of(const std::vector<In>& ins, const std::string& version_header,
                              int64_t ts) {
  protocol::RecordBatchBuilder bb;
  std::vector<std::string> keep;
  keep.reserve(ins.size());
  for (const auto& in : ins) {
    std::vector<protocol::Header> hs;
    if (in.version) {
      std::string v(8, '\0');
      row_format::put_be64(reinterpret_cast<uint8_t*>(v.data()), *in.version);
      keep.push_back(v);
      hs.push_back(protocol::Header{version_header, b(keep.back())});
    }
    std::optional<std::span<const uint8_t>> value;
    if (in.value) value = b(*in.value);
    bb.add(ts, b(in.key), value, hs);
  }
  return bb.build();
}

// (kind, value) of each output record: what a write decided.
std::vector<std::string> outcome(const std::vector<uint8_t>& batch) {
  std::vector<std::string> out;
  protocol::RecordBatchView v(batch);
  auto r = protocol::RecordReader::open(v);
  protocol::Record rec;
  while (r.ok() && *r->next(rec)) {
    std::string o;
    auto it = rec.headers();
    protocol::Header h;
    while (it.next(h)) {
      if (h.key == protocol::pk::kChangeHeader && h.value) {
        o.assign(reinterpret_cast<const char*>(h.value->data()), h.value->size());
      }
    }
    o += "=";
    if (rec.value) o.append(reinterpret_cast<const char*>(rec.value->data()), rec.value->size());
    out.push_back(o);
  }
  return out;
}

struct Variant {
  MergeEngine engine;
  DeleteBehavior del;
  int64_t ttl_ms;
};

void PrintTo(const Variant& v, std::ostream* os) {
  *os << merge_engine_name(v.engine) << "/" << delete_behavior_name(v.del) << "/ttl=" << v.ttl_ms;
}

class PkCompactionTest : public ::testing::TestWithParam<Variant> {
 protected:
  std::unique_ptr<storage::PartitionLog> open_log(const std::string& dir) {
    storage::LogConfig c;
    c.segment_bytes = 2048;  // many sealed (cleanable) segments
    c.index_interval_bytes = 256;
    auto log = storage::PartitionLog::open(storage::default_env(), dir, c, 1);
    EXPECT_TRUE(log.ok()) << log.status().to_string();
    return log.ok() ? std::move(*log) : nullptr;
  }
  std::unique_ptr<PkState> open_state(storage::PartitionLog& log) {
    auto s = PkState::open(env_, log, options_);
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    return s.ok() ? std::move(*s) : nullptr;
  }
  // Writes `ins` to `state`; returns the decided outcome.
  std::vector<std::string> put(PkState& state, storage::PartitionLog& log,
                               const std::vector<In>& ins) {
    auto input = batch_of(ins, options_.table.version_header, now_.load());
    auto w = testing::write_through(state, log, input, now_.load());
    EXPECT_TRUE(w.ok()) << w.result.status.to_string();
    return outcome(w.batch);
  }
  std::vector<In> random_batch(std::mt19937& rng, int keys) {
    std::vector<In> ins;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      In in;
      in.key = name('k', static_cast<int64_t>(rng() % keys));
      if (rng() % 5 == 0) {
        in.value = std::nullopt;  // delete (ignored / refused per delete behaviour)
      } else {
        in.value = name('v', static_cast<int64_t>(rng() % 4));  // few values: identical writes
      }
      if (options_.table.merge_engine == MergeEngine::versioned) {
        in.version = static_cast<int64_t>(rng() % 20);  // lower versions log `none`
      }
      ins.push_back(in);
    }
    return ins;
  }

  storage::testing::TempDir tmp_;
  PkEnvironment env_;
  PkState::Options options_;
  std::atomic<int64_t> now_{1'000'000};
};

TEST_P(PkCompactionTest, CompactedLogRebuildsTheLiveState) {
  const Variant v = GetParam();
  options_.table.merge_engine = v.engine;
  options_.table.delete_behavior = v.del;
  options_.table.ttl_ms = v.ttl_ms;
  if (v.engine == MergeEngine::versioned) options_.table.version_header = "ver";
  options_.clock = [this] { return now_.load(); };
  constexpr int kKeys = 16;
  std::mt19937 rng(7 + static_cast<unsigned>(v.engine) * 10 + static_cast<unsigned>(v.del));

  const std::string live_dir = tmp_.sub("t-0");
  auto log = open_log(live_dir);
  auto state = open_state(*log);
  ASSERT_TRUE(state);
  int nones = 0;
  for (int i = 0; i < 400; ++i) {
    auto ins = random_batch(rng, kKeys);
    if (v.del == DeleteBehavior::disable) {
      for (auto& in : ins) {
        if (!in.value) in.value = "d";  // refused deletes would fail the batch
      }
    }
    for (const auto& o : put(*state, *log, ins)) nones += o.rfind("none=", 0) == 0;
    if (v.ttl_ms > 0) now_ += static_cast<int64_t>(rng() % (v.ttl_ms / 8));
  }
  EXPECT_GT(nones, 10) << "the workload must log no-op writes";
  // Fill the active segment so every workload record is in a sealed, cleanable segment.
  const size_t segments = log->segment_base_offsets().size();
  for (int i = 0; log->segment_base_offsets().size() == segments; ++i) {
    put(*state, *log,
        {{"filler", name('f', i),
          v.engine == MergeEngine::versioned ? std::optional<int64_t>(1000 + i) : std::nullopt}});
  }
  ASSERT_TRUE(state->close().ok());
  state.reset();
  ASSERT_TRUE(log->close().ok());
  log.reset();

  // A copy of the log without its state, compacted: only the newest record of each key is left.
  const std::string copy_dir = tmp_.sub("t-1");
  fs::create_directories(copy_dir);
  for (const auto& e : fs::directory_iterator(live_dir)) {
    if (e.is_regular_file()) fs::copy_file(e.path(), fs::path(copy_dir) / e.path().filename());
  }
  auto copy = open_log(copy_dir);
  ASSERT_TRUE(copy);
  storage::CleanerPolicy policy;
  policy.min_cleanable_ratio = 0;
  policy.delete_retention_ms = 1000;
  storage::LogCleaner cleaner;
  auto first = cleaner.clean(*copy, policy, now_.load() + 10'000'000, /*force=*/true);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_GT(first->records_removed, 0);
  auto second = cleaner.clean(*copy, policy, now_.load() + 20'000'000, /*force=*/true);
  ASSERT_TRUE(second.ok()) << second.status().to_string();  // drops the tombstones

  log = open_log(live_dir);
  state = open_state(*log);
  auto rebuilt = open_state(*copy);  // no kv/: replays the compacted log from its start
  ASSERT_TRUE(state && rebuilt);
  ASSERT_EQ(rebuilt->applied_offset(), state->applied_offset());

  auto compare = [&](const char* when) {
    for (int k = 0; k <= kKeys; ++k) {
      const std::string key = k == kKeys ? "filler" : name('k', k);
      auto a = state->lookup(b(key));
      auto c = rebuilt->lookup(b(key));
      ASSERT_TRUE(a.ok() && c.ok());
      EXPECT_EQ(c->found, a->found) << when << " " << key;
      if (!a->found || !c->found) continue;
      EXPECT_EQ(c->value, a->value) << when << " " << key;
      EXPECT_EQ(c->offset, a->offset) << when << " " << key;
      EXPECT_EQ(c->timestamp, a->timestamp) << when << " " << key;
    }
  };
  compare("after rebuild");
  // The same further writes decide the same on both (versions, first-row ignores, TTL clocks).
  for (int i = 0; i < 100; ++i) {
    auto ins = random_batch(rng, kKeys);
    if (v.del == DeleteBehavior::disable) {
      for (auto& in : ins) {
        if (!in.value) in.value = "d";
      }
    }
    EXPECT_EQ(put(*rebuilt, *copy, ins), put(*state, *log, ins)) << "probe " << i;
    if (v.ttl_ms > 0) now_ += static_cast<int64_t>(rng() % (v.ttl_ms / 8));
  }
  compare("after probes");
  ASSERT_TRUE(rebuilt->close().ok());
  ASSERT_TRUE(state->close().ok());
}

INSTANTIATE_TEST_SUITE_P(
    Engines, PkCompactionTest,
    ::testing::Values(Variant{MergeEngine::last_row, DeleteBehavior::allow, -1},
                      Variant{MergeEngine::last_row, DeleteBehavior::allow, 4000},
                      Variant{MergeEngine::first_row, DeleteBehavior::ignore, -1},
                      Variant{MergeEngine::first_row, DeleteBehavior::allow, 4000},
                      Variant{MergeEngine::versioned, DeleteBehavior::ignore, -1},
                      Variant{MergeEngine::versioned, DeleteBehavior::allow, 4000},
                      Variant{MergeEngine::last_row, DeleteBehavior::disable, -1}));

}  // namespace
}  // namespace strata::pkindex
