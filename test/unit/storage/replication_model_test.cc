// A model test of PartitionLog's replication calls: random leader appends, follower appends,
// truncations, resets, leadership changes, high-watermark moves and clean, crash and power-loss
// restarts (FaultInjectionEnv), each checked against a plain model of the batches, the epoch
// history and the producers' last sequences. flush.messages=1, so every successful append is
// durable and a power loss must give back exactly the model.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "storage/partition_log.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::read_bytes;
using testing::TempDir;

struct ModelBatch {
  std::vector<uint8_t> bytes;
  int64_t base;
  int64_t last;
  int32_t epoch;
  int64_t pid;  // -1: none
  int32_t first_seq;
};

struct Model {
  int64_t start = 0;
  int64_t end = 0;
  std::vector<ModelBatch> batches;
  std::vector<std::pair<int32_t, int64_t>> epochs;  // (epoch, start offset)
  bool leading = false;
  int32_t leader_epoch = -1;
  int64_t hw = 0;

  int32_t latest_epoch() const { return epochs.empty() ? -1 : epochs.back().first; }
  void start_epoch(int32_t epoch, int64_t at) {
    while (!epochs.empty() && (epochs.back().first >= epoch || epochs.back().second >= at)) {
      epochs.pop_back();
    }
    epochs.emplace_back(epoch, at);
  }
  // Kafka's end offset for epoch, computed from the model's history.
  std::pair<int32_t, int64_t> end_for(int32_t epoch) const {
    if (epoch < 0 || epochs.empty()) return {-1, -1};
    if (epoch == latest_epoch()) return {epoch, end};
    std::optional<size_t> floor;
    for (size_t i = 0; i < epochs.size(); ++i) {
      if (epochs[i].first <= epoch) floor = i;
    }
    const size_t higher = floor ? *floor + 1 : 0;
    if (higher >= epochs.size()) return {-1, -1};
    return {floor ? epochs[*floor].first : epoch, epochs[higher].second};
  }
  // (last sequence, last offset) of each producer's last batch.
  std::map<int64_t, std::pair<int32_t, int64_t>> producers() const {
    std::map<int64_t, std::pair<int32_t, int64_t>> out;
    for (const auto& b : batches) {
      if (b.pid >= 0) {
        out[b.pid] = {b.first_seq + static_cast<int32_t>(b.last - b.base), b.last};
      }
    }
    return out;
  }
  int32_t next_seq(int64_t pid) const {
    auto p = producers();
    auto it = p.find(pid);
    return it == p.end() ? 0 : it->second.first + 1;
  }
};

ModelBatch build(int64_t base, int records, int32_t epoch, int64_t pid, int32_t seq,
                 std::mt19937& rng) {
  protocol::RecordBatchBuilder b;
  b.set_base_offset(base).set_partition_leader_epoch(epoch);
  if (pid >= 0) b.set_producer(pid, 0, seq);
  for (int i = 0; i < records; ++i) {
    std::vector<uint8_t> value(5 + rng() % 30, static_cast<uint8_t>('a' + rng() % 26));
    b.add(1000 + static_cast<int64_t>(rng() % 100000), std::nullopt,
          std::span<const uint8_t>(value));
  }
  return {b.build(), base, base + records - 1, epoch, pid, seq};
}

void check(const PartitionLog& log, const Model& m, const std::string& step) {
  SCOPED_TRACE(step);
  ASSERT_EQ(log.log_start_offset(), m.start);
  ASSERT_EQ(log.log_end_offset(), m.end);
  ASSERT_EQ(log.durable_end_offset(), m.end);
  ASSERT_EQ(log.high_watermark(), m.hw);
  std::vector<uint8_t> want;
  for (const auto& b : m.batches) {
    if (b.last >= m.start) want.insert(want.end(), b.bytes.begin(), b.bytes.end());
  }
  auto r = log.read(m.start, 1 << 30, true, INT64_MAX);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_EQ(read_bytes(*r), want);
  ASSERT_EQ(log.latest_epoch(), m.latest_epoch());
  for (int32_t e = -1; e <= m.latest_epoch() + 1; ++e) {
    ASSERT_EQ(log.end_offset_for_epoch(e), m.end_for(e)) << "epoch " << e;
  }
  const auto producers = m.producers();
  for (int64_t pid = 1; pid <= 3; ++pid) {
    auto got = log.producer_state(pid);
    auto it = producers.find(pid);
    if (it == producers.end()) {
      ASSERT_FALSE(got.has_value()) << "producer " << pid;
      continue;
    }
    ASSERT_TRUE(got.has_value()) << "producer " << pid;
    ASSERT_EQ(got->last()->last_seq, it->second.first) << "producer " << pid;
    ASSERT_EQ(got->last()->last_offset, it->second.second) << "producer " << pid;
  }
}

void run_model(uint32_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  TempDir d;
  testing::FaultInjectionEnv env;
  LogConfig config;
  config.replicated = true;
  config.segment_bytes = 250 + rng() % 400;
  config.index_interval_bytes = 50;
  config.flush_interval_messages = 1;
  auto opened = PartitionLog::open(&env, d.path(), config, 0);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<PartitionLog> log = std::move(*opened);
  Model m;
  auto reopen = [&](bool clean, bool power_loss) {
    if (clean) {
      ASSERT_TRUE(log->close().ok());
    }
    log.reset();
    if (power_loss) {
      ASSERT_TRUE(env.drop_unsynced_data().ok());
    }
    auto again = PartitionLog::open(&env, d.path(), config, 0);
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    log = std::move(*again);
    m.leading = false;
    m.hw = m.start;
    // Leadership does not survive a restart: an epoch with no batch yet is forgotten.
    while (!m.epochs.empty() && m.epochs.back().second >= m.end) m.epochs.pop_back();
  };

  for (int step = 0; step < 150; ++step) {
    const int op = static_cast<int>(rng() % 100);
    std::string what;
    const int64_t pid = rng() % 2 ? 1 + static_cast<int64_t>(rng() % 3) : -1;
    if (op < 25 && m.leading) {
      what = "leader append";
      ModelBatch b =
          build(0, 1 + static_cast<int>(rng() % 4), 0, pid, pid >= 0 ? m.next_seq(pid) : 0, rng);
      auto r = log->append(b.bytes, 0);  // rewrites base offset and epoch in place
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      ASSERT_EQ(r->producer_check, ProducerCheck::ok);
      ASSERT_EQ(r->base_offset, m.end);
      b.last += m.end;
      b.base = m.end;
      b.epoch = m.leader_epoch;
      m.end = b.last + 1;
      m.batches.push_back(std::move(b));
    } else if (op < 30 && m.leading && !m.producers().empty()) {
      what = "leader duplicate";
      const auto producers = m.producers();
      auto it = producers.begin();
      std::advance(it, static_cast<ptrdiff_t>(rng() % producers.size()));
      const ModelBatch* last = nullptr;
      for (const auto& b : m.batches) {
        if (b.pid == it->first) last = &b;
      }
      ModelBatch dup = build(0, static_cast<int>(last->last - last->base + 1), 0, last->pid,
                             last->first_seq, rng);
      auto r = log->append(dup.bytes, 0);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->producer_check, ProducerCheck::duplicate);
      ASSERT_EQ(r->base_offset, last->base);
    } else if (op < 55) {
      what = "follower append";
      const int32_t epoch = std::max(0, m.latest_epoch() + static_cast<int32_t>(rng() % 3) - 1);
      std::vector<uint8_t> bytes;
      std::vector<ModelBatch> added;
      int64_t at = m.end;
      std::map<int64_t, int32_t> seqs;
      for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) {
        const int64_t p = rng() % 2 ? 1 + static_cast<int64_t>(rng() % 3) : -1;
        int32_t seq = 0;
        if (p >= 0) seq = seqs.count(p) ? seqs[p] : m.next_seq(p);
        ModelBatch b = build(at, 1 + static_cast<int>(rng() % 4), epoch, p, seq, rng);
        if (p >= 0) seqs[p] = seq + static_cast<int32_t>(b.last - b.base) + 1;
        at = b.last + 1;
        bytes.insert(bytes.end(), b.bytes.begin(), b.bytes.end());
        added.push_back(std::move(b));
      }
      auto r = log->append_as_follower(bytes, 0);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      ASSERT_EQ(*r, at);
      if (epoch > m.latest_epoch()) m.start_epoch(epoch, m.end);
      for (auto& b : added) m.batches.push_back(std::move(b));
      m.end = at;
      m.leading = false;
    } else if (op < 67) {
      const int64_t target = m.start + static_cast<int64_t>(rng() % (m.end - m.start + 3));
      what = "truncate to " + std::to_string(target);
      int64_t new_end = m.end;
      size_t keep = m.batches.size();
      for (size_t i = 0; i < m.batches.size(); ++i) {
        if (m.batches[i].last >= target) {
          new_end = m.batches[i].base;
          keep = i;
          break;
        }
      }
      if (target >= m.end) new_end = m.end;
      Status st = log->truncate_to(target);
      if (target < m.end && (target < m.start || new_end < m.start)) {
        ASSERT_EQ(st.code(), Errc::invalid_argument) << st.to_string();
      } else {
        ASSERT_TRUE(st.ok()) << st.to_string();
        if (target >= m.end) {
          while (!m.epochs.empty() && m.epochs.back().second >= m.end) m.epochs.pop_back();
        } else {
          m.batches.resize(keep);
          m.end = new_end;
          while (!m.epochs.empty() && m.epochs.back().second >= new_end) m.epochs.pop_back();
          m.hw = std::min(m.hw, new_end);
        }
      }
      m.leading = false;
    } else if (op < 71) {
      const int64_t target = m.end + static_cast<int64_t>(rng() % 20);
      what = "reset to " + std::to_string(target);
      ASSERT_TRUE(log->reset_to(target).ok());
      m = Model{target, target, {}, {}, false, m.leader_epoch, target};
    } else if (op < 80) {
      const int32_t epoch = m.latest_epoch() + static_cast<int32_t>(rng() % 3) - 1;
      what = "become leader " + std::to_string(epoch);
      Status st = log->become_leader(epoch);
      if (epoch < 0 || epoch < m.latest_epoch()) {
        ASSERT_EQ(st.code(), Errc::invalid_argument);
      } else {
        ASSERT_TRUE(st.ok()) << st.to_string();
        if (epoch > m.latest_epoch()) m.start_epoch(epoch, m.end);
        m.leading = true;
        m.leader_epoch = epoch;
      }
    } else if (op < 88) {
      const int64_t hw = static_cast<int64_t>(rng() % (m.end + 5));
      what = "advance hw " + std::to_string(hw);
      m.hw = std::max(m.hw, std::min(hw, m.end));
      ASSERT_EQ(log->advance_high_watermark(hw), m.hw);
    } else if (op < 92) {
      what = "DeleteRecords";
      const int64_t to = m.start + static_cast<int64_t>(rng() % (m.hw - m.start + 1));
      auto r = log->delete_records_before(to);
      ASSERT_TRUE(r.ok());
      m.start = std::max(m.start, to);
    } else if (op < 95) {
      what = "clean restart";
      reopen(true, false);
    } else if (op < 98) {
      what = "crash";
      reopen(false, false);
    } else {
      what = "power loss";
      reopen(false, true);
    }
    check(*log, m, "step " + std::to_string(step) + ": " + what);
    if (::testing::Test::HasFatalFailure()) return;
  }
  reopen(false, true);
  check(*log, m, "final power loss");
}

TEST(ReplicationModel, RandomOperationsMatchTheModel) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    run_model(seed);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace strata::storage
