// The history index (table.history.enabled, pkindex/pk_history.cc): a model test of point-in-time
// reads — random upserts and deletes with timestamps (some late: older than an earlier change of
// the key), then LookupAsOf by offset and by time at random points equals the model's row at that
// point; the log's start moves and the history is trimmed: points before the boundary answer
// out_of_retention with the earliest point that is covered, the rest stay exact; a crash and a
// reopen (replay) leave every answer as it was.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pkindex/pk_state.h"
#include "pkindex/table_config.h"
#include "protocol/record/batch_builder.h"
#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex {
namespace {

std::span<const uint8_t> bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// One change of a key as the model keeps it: a put (value) or a delete (nullopt).
struct Change {
  int64_t offset;
  int64_t timestamp;
  std::optional<std::string> value;
};

class PkHistoryTest : public ::testing::Test {
 protected:
  void open(const TableConfig& t) {
    if (!log_) {
      auto log = storage::PartitionLog::open(storage::default_env(), tmp_.sub(dir_), {}, 1);
      ASSERT_TRUE(log.ok()) << log.status().to_string();
      log_ = std::move(*log);
    }
    options_.table = t;
    options_.flush_on_close = false;  // close() = a crash
    options_.clock = [this] { return now_; };
    auto s = PkState::open(env_, *log_, options_);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    state_ = std::move(*s);
  }
  static TableConfig history_table(int64_t ttl_ms = -1) {
    std::map<std::string, std::string> c{{"table.type", "primary-key"},
                                         {"table.history.enabled", "true"}};
    if (ttl_ms > 0) c["table.kv.ttl.ms"] = std::to_string(ttl_ms);
    auto t = parse_table_config(c);
    EXPECT_TRUE(t.ok()) << t.status().to_string();
    return *t;
  }
  // Writes records (key, timestamp, value or a delete); returns the base offset.
  int64_t write(
      const std::vector<std::tuple<std::string, int64_t, std::optional<std::string>>>& recs) {
    protocol::RecordBatchBuilder bb;
    for (const auto& [k, ts, v] : recs) {
      std::optional<std::span<const uint8_t>> value;
      if (v) value = bytes(*v);
      bb.add(ts, bytes(k), value, {});
    }
    std::vector<uint8_t> in = bb.build();
    auto r = state_->write(WriteInput{protocol::RecordBatchView(in)}, now_,
                           [&](std::span<uint8_t> out) { return log_->append(out, now_); });
    EXPECT_TRUE(r.status.ok()) << r.status.to_string();
    return r.appended.base_offset;
  }
  AsOfResult as_of(const std::string& key, AsOf::Kind kind, int64_t at) {
    auto r = reader_ ? reader_->lookup(bytes(key), AsOf{kind, at})
                     : state_->lookup_as_of(bytes(key), AsOf{kind, at});
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? *r : AsOfResult{};
  }

  storage::testing::TempDir tmp_;
  PkEnvironment env_;
  std::unique_ptr<storage::PartitionLog> log_;
  PkState::Options options_;
  std::unique_ptr<PkState> state_;
  std::optional<PkState::HistoryReader> reader_;  // as_of() reads through it when set
  int64_t now_ = 1'000'000;
  std::string dir_ = "t-0";
};

TEST_F(PkHistoryTest, RowsAsOfOffsetsAndTimesIncludingALateRecordAndTtl) {
  open(history_table());
  write({{"k", 100, "v1"}, {"j", 100, "j1"}});  // offsets 0, 1
  write({{"k", 200, "v2"}});                    // 2
  write({{"k", 150, std::nullopt}});            // 3: a late delete (older than v2)
  write({{"k", 300, "v3"}});                    // 4
  auto at = [&](AsOf::Kind kind, int64_t t) {
    auto r = as_of("k", kind, t);
    return r.found ? r.value + "@" + std::to_string(r.offset) : std::string("absent");
  };
  using K = AsOf::Kind;
  EXPECT_EQ(at(K::offset, -1), "absent");
  EXPECT_EQ(at(K::offset, 0), "v1@0");
  EXPECT_EQ(at(K::offset, 1), "v1@0");
  EXPECT_EQ(at(K::offset, 2), "v2@2");
  EXPECT_EQ(at(K::offset, 3), "absent");
  EXPECT_EQ(at(K::offset, 99), "v3@4");
  EXPECT_EQ(at(K::timestamp, 99), "absent");
  EXPECT_EQ(at(K::timestamp, 100), "v1@0");
  // The late delete is found at its own time: from 150 the newest change (in log order) with a
  // timestamp at or before the point is the delete, until v3.
  EXPECT_EQ(at(K::timestamp, 149), "v1@0");
  EXPECT_EQ(at(K::timestamp, 150), "absent");
  EXPECT_EQ(at(K::timestamp, 250), "absent");
  EXPECT_EQ(at(K::timestamp, 300), "v3@4");
  EXPECT_EQ(as_of("j", K::timestamp, 1000).value, "j1");
  EXPECT_FALSE(as_of("nobody", K::timestamp, 1000).found);
  // Tables without history refuse the read.
  ASSERT_TRUE(state_->close().ok());
  state_.reset();
  log_.reset();
  dir_ = "plain";
  auto plain = parse_table_config({{"table.type", "primary-key"}});
  open(*plain);
  EXPECT_EQ(state_->lookup_as_of(bytes("k"), AsOf{}).status().code(), Errc::invalid_argument);
}

TEST_F(PkHistoryTest, ATimeReadStepsOverAtMostItsBudget) {
  open(history_table());
  write({{"k", 100, "old"}});
  for (int i = 0; i < 10; ++i) write({{"k", 1000 + i, "new" + std::to_string(i)}});
  uint64_t steps = 5;
  auto r = state_->lookup_as_of(bytes("k"), AsOf{AsOf::Kind::timestamp, 500}, &steps);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->truncated) << "ten newer changes, five steps";
  EXPECT_FALSE(r->found);
  steps = 20;
  r = state_->lookup_as_of(bytes("k"), AsOf{AsOf::Kind::timestamp, 500}, &steps);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->truncated);
  EXPECT_EQ(r->value, "old");
  EXPECT_EQ(steps, 10u) << "one step per newer change";
}

TEST_F(PkHistoryTest, AReaderAnswersFromOneViewTakenWhenItOpened) {
  open(history_table());
  write({{"k", 100, "v1"}, {"ka", 100, "a1"}});  // offsets 0, 1
  auto reader = state_->history_reader();
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  // After the reader opened (from another thread: this one holds the state's read lock).
  std::thread([&] { write({{"k", 200, "v2"}, {"kb", 200, "b1"}}); }).join();
  for (const auto& [key, want] : std::vector<std::pair<std::string, std::string>>{
           {"kb", ""}, {"k", "v1"}, {"ka", "a1"}, {"kz", ""}, {"k", "v1"}, {"", ""}}) {
    auto r = reader->lookup(bytes(key), AsOf{AsOf::Kind::timestamp, 1000});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->found, !want.empty()) << key;
    if (r->found) {
      EXPECT_EQ(r->value, want) << key;
    }
  }
  auto fresh = state_->lookup_as_of(bytes("k"), AsOf{AsOf::Kind::timestamp, 1000});
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->value, "v2");
}

TEST_F(PkHistoryTest, TtlRowsAreAbsentFromTheirExpiryOn) {
  open(history_table(/*ttl_ms=*/50));
  now_ = 1000;
  write({{"k", 1000, "v"}});  // TTL clock: the append time, 1000
  EXPECT_TRUE(as_of("k", AsOf::Kind::timestamp, 1049).found);
  EXPECT_FALSE(as_of("k", AsOf::Kind::timestamp, 1050).found) << "clock + ttl <= T: expired";
}

class PkHistoryModel : public PkHistoryTest, public ::testing::WithParamInterface<int> {};

TEST_P(PkHistoryModel, AsOfEqualsTheModelThroughTrimsAndCrashes) {
  std::mt19937 rng(GetParam());
  open(history_table());
  // Keys that are prefixes of each other: a read must never run into a neighbour's history.
  const std::vector<std::string> keys = {"a", "ab", "abc", "b", "c", "d", "e", "f"};
  std::map<std::string, std::vector<Change>> model;  // per key, in offset order
  std::map<std::string, bool> present;
  int64_t clock = 10'000;
  int64_t horizon = 0;
  int64_t watermark = std::numeric_limits<int64_t>::min();
  int64_t last_offset = -1;
  int refused = 0;       // points answered out_of_retention
  uint64_t trimmed = 0;  // history entries trim_history removed

  // The model's row of `key` as of `at`: the newest change (by offset) at or before the point.
  auto expect_row = [&](const std::string& key, AsOf::Kind kind, int64_t at) {
    const Change* hit = nullptr;
    for (const auto& c : model[key]) {
      if ((kind == AsOf::Kind::offset ? c.offset : c.timestamp) <= at) hit = &c;
    }
    const AsOfResult got = as_of(key, kind, at);
    const std::string where = key + (kind == AsOf::Kind::offset ? " @offset " : " @time ") +
                              std::to_string(at) + " (horizon " + std::to_string(horizon) + ")";
    bool covered;
    if (kind == AsOf::Kind::offset) {
      covered = horizon == 0 || at >= horizon - 1 || at < 0;  // before offset 0: nothing
    } else {
      covered = horizon == 0 || at >= watermark || (hit && hit->offset >= horizon);
    }
    if (!covered) {
      ++refused;
      EXPECT_TRUE(got.out_of_retention) << where;
      EXPECT_EQ(got.earliest, kind == AsOf::Kind::offset ? horizon - 1 : watermark) << where;
      return;
    }
    ASSERT_FALSE(got.out_of_retention) << where;
    if (!hit || !hit->value) {
      EXPECT_FALSE(got.found) << where << ": " << got.value;
      return;
    }
    ASSERT_TRUE(got.found) << where;
    EXPECT_EQ(got.value, *hit->value) << where;
    EXPECT_EQ(got.offset, hit->offset) << where;
    EXPECT_EQ(got.timestamp, hit->timestamp) << where;
  };
  auto check_all = [&] {
    // Half the rounds read through one reader (one iterator for all their keys), half per key.
    if (rng() % 2) {
      auto r = state_->history_reader();
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      reader_.emplace(std::move(*r));
    }
    for (int q = 0; q < 60; ++q) {
      const std::string& key = keys[rng() % keys.size()];
      if (rng() % 2) {
        expect_row(key, AsOf::Kind::offset, static_cast<int64_t>(rng() % (last_offset + 3)) - 1);
      } else {
        expect_row(key, AsOf::Kind::timestamp,
                   9'990 + static_cast<int64_t>(rng() % (clock - 9'980)));
      }
    }
    reader_.reset();  // it holds the state's read lock: close() would wait for it
  };

  for (int step = 0; step < 60; ++step) {
    std::vector<std::tuple<std::string, int64_t, std::optional<std::string>>> recs;
    const int n = 1 + static_cast<int>(rng() % 4);
    std::vector<std::tuple<std::string, int64_t, std::optional<std::string>>> applied;
    for (int i = 0; i < n; ++i) {
      const std::string& key = keys[rng() % keys.size()];
      clock += static_cast<int64_t>(rng() % 20);
      // Every fifth record is late: its timestamp lies before changes already written.
      const int64_t ts = rng() % 5 == 0 ? clock - 1 - static_cast<int64_t>(rng() % 60) : clock;
      std::optional<std::string> v;
      if (rng() % 4 != 0)
        v = std::string("v").append(std::to_string(step)).append(".").append(std::to_string(i));
      recs.emplace_back(key, ts, v);
    }
    const int64_t base = write(recs);
    for (size_t i = 0; i < recs.size(); ++i) {
      const auto& [key, ts, v] = recs[i];
      const int64_t offset = base + static_cast<int64_t>(i);
      last_offset = offset;
      if (!v && !present[key]) continue;  // deleting an absent key changes nothing
      model[key].push_back(Change{offset, ts, v});
      present[key] = v.has_value();
    }
    if (step % 10 == 9) {
      check_all();
      // The log's start moves (a checkpoint first: the state must not need what goes) and the
      // history follows it.
      ASSERT_TRUE(state_->create_checkpoint().ok());
      const int64_t bound = state_->retention_bound();
      const int64_t target = std::min(bound, last_offset + 1 - static_cast<int64_t>(rng() % 4));
      if (target > horizon) {
        ASSERT_TRUE(log_->advance_log_start_offset(target).ok());
        auto removed = state_->trim_history(target);
        ASSERT_TRUE(removed.ok()) << removed.status().to_string();
        trimmed += *removed;
        for (const auto& [key, changes] : model) {
          for (const auto& c : changes) {
            if (c.offset < target) watermark = std::max(watermark, c.timestamp);
          }
        }
        horizon = target;
      }
      check_all();
    }
    if (step % 20 == 19) {
      ASSERT_TRUE(state_->close().ok());  // a crash: what was not flushed is replayed
      state_.reset();
      open(options_.table);
      ASSERT_TRUE(state_->trim_history(log_->log_start_offset()).ok());
      check_all();
    }
  }
  EXPECT_GT(trimmed, 0u) << "the log's start moved and took history with it";
  EXPECT_GT(refused, 0) << "points before the boundary were asked for";
}

INSTANTIATE_TEST_SUITE_P(Seeds, PkHistoryModel, ::testing::Range(1, 9));

}  // namespace
}  // namespace strata::pkindex
