// The partition side of transactions: open transactions per producer, the last stable offset,
// COMMIT/ABORT markers and the aborted-transaction index (.txnindex), across clean restarts,
// crashes and power losses. A model replays the surviving batches with Kafka's rules and must
// agree with the log after every step.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>

#include "protocol/record/byte_order.h"
#include "protocol/record/crc32c.h"
#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/partition_log.h"
#include "storage/retention.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::TempDir;

std::vector<uint8_t> data_batch(int64_t pid, int16_t epoch, int32_t seq, bool transactional,
                                int records, int64_t ts = 1000) {
  protocol::RecordBatchBuilder b(codec::Compression::none);
  if (pid >= 0) b.set_producer(pid, epoch, seq);
  b.set_transactional(transactional);
  std::vector<uint8_t> value(20, 'v');
  for (int i = 0; i < records; ++i) b.add(ts, std::nullopt, std::span<const uint8_t>(value));
  return b.build();
}

Result<PartitionLog::AppendInfo> append(PartitionLog& log, std::vector<uint8_t> batch) {
  return log.append(batch, 1000);
}

// The next sequence the log expects from (pid, epoch).
int32_t next_seq(const PartitionLog& log, int64_t pid, int16_t epoch) {
  auto e = log.producer_state(pid);
  if (!e || e->epoch != epoch || e->count == 0) return 0;
  return e->last()->last_seq + 1;
}

// What the model keeps of one appended batch.
struct ModelBatch {
  int64_t base = 0;
  int64_t last = 0;
  int64_t pid = -1;
  int16_t epoch = -1;
  bool transactional = false;
  bool marker = false;
  bool commit = false;
  int32_t coordinator_epoch = -1;  // markers
};

// Kafka's rules replayed over the surviving batches.
struct Model {
  std::vector<ModelBatch> batches;
  std::map<int64_t, int64_t> open;  // pid -> first offset of its open transaction
  std::map<int64_t, int16_t> epoch;
  std::map<int64_t, int32_t> coordinator;  // pid -> coordinator epoch of its last marker
  std::vector<AbortedTxn> aborted;

  void replay() {
    open.clear();
    epoch.clear();
    coordinator.clear();
    aborted.clear();
    for (const ModelBatch& b : batches) {
      if (b.pid < 0) continue;
      epoch[b.pid] = std::max<int16_t>(epoch.count(b.pid) ? epoch[b.pid] : -1, b.epoch);
      if (!b.marker) {
        if (b.transactional && !open.count(b.pid)) open[b.pid] = b.base;
        continue;
      }
      const int64_t first = open.count(b.pid) ? open[b.pid] : b.base;
      open.erase(b.pid);
      coordinator[b.pid] = b.coordinator_epoch;
      int64_t lso = b.base + 1;
      for (const auto& [p, f] : open) lso = std::min(lso, f);
      if (!b.commit) aborted.push_back({b.pid, first, b.base, lso});
    }
  }
  void truncate(int64_t end) {
    while (!batches.empty() && batches.back().last >= end) batches.pop_back();
    replay();
  }
  int64_t lso(int64_t hw) const {
    int64_t v = hw;
    for (const auto& [p, f] : open) v = std::min(v, f);
    return v;
  }
  std::vector<AbortedTxn> query(int64_t from, int64_t upper) const {
    std::vector<AbortedTxn> out;
    for (const AbortedTxn& a : aborted) {
      if (a.last_offset >= from && a.first_offset < upper) out.push_back(a);
    }
    return out;
  }
};

void check_against_model(const PartitionLog& log, const Model& m, std::mt19937& rng,
                         const std::vector<int64_t>& pids) {
  const int64_t hw = log.high_watermark();
  ASSERT_EQ(hw, log.log_end_offset());
  ASSERT_EQ(log.last_stable_offset(), m.lso(hw));
  ASSERT_LE(log.last_stable_offset(), hw);
  for (int64_t pid : pids) {
    auto e = log.producer_state(pid);
    const int64_t expect = m.open.count(pid) ? m.open.at(pid) : -1;
    ASSERT_EQ(e ? e->txn_first_offset : -1, expect) << "producer " << pid;
    const int32_t coordinator = m.coordinator.count(pid) ? m.coordinator.at(pid) : -1;
    ASSERT_EQ(e ? e->coordinator_epoch : -1, coordinator) << "producer " << pid;
  }
  const int64_t end = log.log_end_offset();
  ASSERT_EQ(log.aborted_transactions(0, end + 1), m.query(0, end + 1));
  for (int q = 0; q < 5; ++q) {
    const int64_t from = static_cast<int64_t>(rng() % static_cast<uint64_t>(end + 2));
    const int64_t upper = from + static_cast<int64_t>(rng() % static_cast<uint64_t>(end + 2));
    ASSERT_EQ(log.aborted_transactions(from, upper), m.query(from, upper))
        << "from " << from << " upper " << upper;
  }
}

void run_model(uint32_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  TempDir d;
  testing::FaultInjectionEnv env;
  LogConfig config;
  config.segment_bytes = 400 + rng() % 800;
  config.index_interval_bytes = 100;
  auto opened = PartitionLog::open(&env, d.path(), config, 0);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<PartitionLog> log = std::move(*opened);
  const std::vector<int64_t> pids = {1, 2, 3, 4};
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
    const int64_t end = log->log_end_offset();
    ASSERT_TRUE(end == 0 || std::any_of(m.batches.begin(), m.batches.end(),
                                        [end](const ModelBatch& b) { return b.last + 1 == end; }))
        << "log end " << end << " is not a batch boundary of the model";
    m.truncate(end);
  };

  for (int step = 0; step < 200; ++step) {
    const uint32_t op = rng() % 100;
    const int64_t pid = pids[rng() % pids.size()];
    const int16_t epoch = m.epoch.count(pid) ? m.epoch[pid] : 0;
    if (op < 15) {  // plain
      auto b = data_batch(-1, -1, -1, false, 1 + rng() % 3);
      auto r = log->append(b, 1000);
      ASSERT_TRUE(r.ok());
      m.batches.push_back({r->base_offset, r->last_offset, -1, -1, false, false, false});
    } else if (op < 55) {  // idempotent or transactional data
      const bool txn = op >= 25;
      auto b = data_batch(pid, epoch, next_seq(*log, pid, epoch), txn, 1 + rng() % 3);
      auto r = log->append(b, 1000);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->producer_check, ProducerCheck::ok) << r->producer_message;
      m.batches.push_back({r->base_offset, r->last_offset, pid, epoch, txn, false, false});
    } else if (op < 78) {  // COMMIT / ABORT, sometimes with an epoch bump (a fenced producer), from
                           // the current coordinator, a newer one, or a deposed one (fenced)
      const bool commit = rng() % 2 == 0;
      const int16_t e = static_cast<int16_t>(epoch + (rng() % 5 == 0 ? 1 : 0));
      const int32_t last = m.coordinator.count(pid) ? m.coordinator[pid] : -1;
      const int32_t ce = std::max<int32_t>(0, last + static_cast<int32_t>(rng() % 3) - 1);
      const int64_t end = log->log_end_offset();
      auto r = log->append_marker(pid, e, ce, commit, 2000);
      ASSERT_TRUE(r.ok());
      if (ce < last) {
        ASSERT_EQ(r->producer_check, ProducerCheck::fenced_coordinator);
        ASSERT_EQ(log->log_end_offset(), end);
        continue;
      }
      ASSERT_EQ(r->producer_check, ProducerCheck::ok);
      m.batches.push_back({r->base_offset, r->last_offset, pid, e, true, true, commit, ce});
      m.replay();
    } else if (op < 84) {  // a marker from an older epoch is refused, nothing written
      if (epoch == 0) continue;
      const int64_t end = log->log_end_offset();
      auto r = log->append_marker(pid, static_cast<int16_t>(epoch - 1), 7, false, 2000);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(r->producer_check, ProducerCheck::stale_epoch);
      ASSERT_EQ(log->log_end_offset(), end);
    } else if (op < 90) {
      reopen(/*clean=*/true, false);
    } else if (op < 95) {
      reopen(/*clean=*/false, false);
    } else {
      reopen(/*clean=*/false, /*power_loss=*/true);
    }
    if (::testing::Test::HasFatalFailure()) return;
    m.replay();
    check_against_model(*log, m, rng, pids);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(TxnModel, RandomTransactionsRestartsAndPowerLossesMatchTheModel) {
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    run_model(seed);
    if (HasFatalFailure()) return;
  }
}

// A partition with two producers' transactions, aborts in several segments.
struct TxnLog {
  TempDir d;
  LogConfig config;
  std::unique_ptr<PartitionLog> log;

  TxnLog() {
    config.segment_bytes = 600;
    auto opened = PartitionLog::open(default_env(), d.path(), config, 0);
    EXPECT_TRUE(opened.ok());
    log = std::move(*opened);
    for (int round = 0; round < 6; ++round) {
      for (int64_t pid : {1, 2}) {
        auto b = data_batch(pid, 0, next_seq(*log, pid, 0), true, 3, 1000 + round);
        EXPECT_TRUE(log->append(b, 1000).ok());
      }
      EXPECT_TRUE(log->append_marker(1, 0, 1, /*commit=*/round % 2 == 0, 1000 + round).ok());
      EXPECT_TRUE(log->append_marker(2, 0, 1, /*commit=*/false, 1000 + round).ok());
    }
  }
  void reopen(bool clean) {
    if (clean) {
      EXPECT_TRUE(log->close().ok());
    }
    log.reset();
    auto opened = PartitionLog::open(default_env(), d.path(), config, 0);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    log = std::move(*opened);
  }
  std::string index_path(int64_t base) const { return segment_txn_index_path(d.path(), base); }
};

TEST(TxnIndex, EntriesAreKafkasFixedLayoutAndLsoIsRecorded) {
  TempDir d;
  auto opened = PartitionLog::open(default_env(), d.path(), LogConfig{}, 0);
  ASSERT_TRUE(opened.ok());
  auto& log = **opened;
  ASSERT_TRUE(append(log, data_batch(1, 0, 0, true, 2)).ok());  // 0..1
  ASSERT_TRUE(append(log, data_batch(2, 0, 0, true, 1)).ok());  // 2
  EXPECT_EQ(log.last_stable_offset(), 0);
  EXPECT_EQ(log.high_watermark(), 3);
  auto m = log.append_marker(1, 0, 5, /*commit=*/false, 1000);  // 3
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->base_offset, 3);
  EXPECT_EQ(log.last_stable_offset(), 2);                               // producer 2 still open
  ASSERT_TRUE(log.append_marker(2, 0, 5, /*commit=*/true, 1000).ok());  // 4
  EXPECT_EQ(log.last_stable_offset(), 5);
  const std::vector<AbortedTxn> want = {{1, 0, 3, 2}};
  EXPECT_EQ(log.aborted_transactions(0, 5), want);
  EXPECT_TRUE(log.aborted_transactions(4, 5).empty());  // ended before the fetch
  EXPECT_TRUE(log.aborted_transactions(0, 0).empty());  // began after the bound

  // The file: one 34-byte big-endian entry.
  auto text = read_file_to_string(default_env(), segment_txn_index_path(d.path(), 0));
  ASSERT_TRUE(text.ok());
  ASSERT_EQ(text->size(), 34u);
  const auto* p = reinterpret_cast<const uint8_t*>(text->data());
  EXPECT_EQ(protocol::detail::load_be<int16_t>(p), 0);
  EXPECT_EQ(protocol::detail::load_be<int64_t>(p + 2), 1);
  EXPECT_EQ(protocol::detail::load_be<int64_t>(p + 10), 0);
  EXPECT_EQ(protocol::detail::load_be<int64_t>(p + 18), 3);
  EXPECT_EQ(protocol::detail::load_be<int64_t>(p + 26), 2);

  // The marker is Kafka's control batch.
  auto read = log.read(3, 1 << 20, true, 4);
  ASSERT_TRUE(read.ok());
  auto bytes = testing::read_bytes(*read);
  protocol::RecordBatchView view(bytes);
  EXPECT_TRUE(view.is_control());
  EXPECT_TRUE(view.is_transactional());
  EXPECT_EQ(view.producer_id(), 1);
  EXPECT_EQ(view.record_count(), 1);
}

TEST(TxnIndex, LostOrTornFilesAreRebuiltWithTheSameAnswers) {
  TxnLog t;
  const auto bases = t.log->segment_base_offsets();
  ASSERT_GE(bases.size(), 3u);
  const int64_t end = t.log->log_end_offset();
  const auto all = t.log->aborted_transactions(0, end);
  ASSERT_EQ(all.size(), 9u);  // 6 of producer 2, 3 of producer 1
  auto bytes_of = [&](int64_t base) {
    auto s = read_file_to_string(default_env(), t.index_path(base));
    return s.ok() ? *s : std::string("<missing>");
  };
  std::vector<std::string> files;
  for (int64_t b : bases) files.push_back(bytes_of(b));

  for (bool clean : {true, false}) {
    SCOPED_TRACE(clean ? "after a clean close" : "after a crash");
    t.reopen(clean);  // settle: the files as an open writes them
    for (size_t i = 0; i < bases.size(); ++i) {
      if (files[i].empty()) continue;
      std::filesystem::remove(t.index_path(bases[i]));  // lost
      t.reopen(clean);
      EXPECT_EQ(t.log->aborted_transactions(0, end), all);
      EXPECT_EQ(bytes_of(bases[i]), files[i]);
      std::filesystem::resize_file(t.index_path(bases[i]), files[i].size() - 5);  // torn
      t.reopen(clean);
      EXPECT_EQ(t.log->aborted_transactions(0, end), all);
      EXPECT_EQ(bytes_of(bases[i]), files[i]);
    }
  }
  // Every index lost at once (as after an upgrade from a broker without transactions).
  for (int64_t b : bases) std::filesystem::remove(t.index_path(b));
  t.reopen(/*clean=*/false);
  EXPECT_EQ(t.log->aborted_transactions(0, end), all);
  for (size_t i = 0; i < bases.size(); ++i) EXPECT_EQ(bytes_of(bases[i]), files[i]);
}

TEST(TxnIndex, RetentionDeletesTheIndexWithItsSegment) {
  TxnLog t;
  const auto bases = t.log->segment_base_offsets();
  ASSERT_GE(bases.size(), 3u);
  for (int64_t b : bases) EXPECT_TRUE(std::filesystem::exists(t.index_path(b)));
  // Batches carry timestamps 1000..1005; 6 ms at now=1010 deletes the segments of rounds 0..3 only.
  auto r = Retention::enforce(*t.log, {true, 6, -1}, 1010);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_GT(r->deleted_segments, 0);
  const auto kept = t.log->segment_base_offsets();
  for (int64_t b : bases) {
    const bool alive = std::find(kept.begin(), kept.end(), b) != kept.end();
    EXPECT_EQ(std::filesystem::exists(t.index_path(b)), alive) << b;
  }
  const int64_t start = t.log->log_start_offset();
  for (const AbortedTxn& a : t.log->aborted_transactions(start, t.log->log_end_offset())) {
    EXPECT_GE(a.last_offset, start);
  }
}

TEST(TxnProducerSnapshot, OldFormatStillLoadsAndOpenTransactionsSurvive) {
  // An "SPS1" snapshot (before transactions): producer 9, epoch 3, last timestamp 77, no batches.
  std::string v1 = "SPS1";
  auto put = [&v1](auto v) {
    uint8_t buf[sizeof(v)];
    protocol::detail::store_be<decltype(v)>(buf, v);
    v1.append(reinterpret_cast<const char*>(buf), sizeof(v));
  };
  put(uint32_t{0});
  put(int64_t{40});
  put(int32_t{1});
  put(int64_t{9});
  put(int16_t{3});
  put(int64_t{77});
  put(int8_t{0});
  const uint32_t crc =
      protocol::crc32c({reinterpret_cast<const uint8_t*>(v1.data()) + 8, v1.size() - 8});
  protocol::detail::store_be<uint32_t>(reinterpret_cast<uint8_t*>(v1.data()) + 4, crc);
  ProducerStateTable t;
  auto off = t.decode_snapshot(v1);
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_EQ(*off, 40);
  ASSERT_NE(t.find(9), nullptr);
  EXPECT_EQ(t.find(9)->epoch, 3);
  EXPECT_EQ(t.find(9)->txn_first_offset, -1);

  EXPECT_EQ(t.find(9)->coordinator_epoch, -1);

  // The new format keeps an open transaction and the coordinator epoch of the last marker.
  t.apply_marker(9, 3, 45, true, 90, 6);
  EXPECT_EQ(t.check_marker(9, 3, 5).kind, ProducerCheck::fenced_coordinator);
  EXPECT_EQ(t.check_marker(9, 2, 7).kind, ProducerCheck::stale_epoch) << "the epoch comes first";
  EXPECT_EQ(t.check_marker(9, 3, 6).kind, ProducerCheck::ok);
  t.apply(ProducerBatch{9, 3, 0, 1, 100}, 50, /*transactional=*/true);
  ProducerStateTable u;
  ASSERT_TRUE(u.decode_snapshot(t.encode_snapshot(52)).ok());
  EXPECT_EQ(u.find(9)->coordinator_epoch, 6);
  EXPECT_EQ(u.check_marker(9, 3, 5).kind, ProducerCheck::fenced_coordinator);
  EXPECT_EQ(u.find(9)->txn_first_offset, 50);
  EXPECT_EQ(u.first_open_txn_offset(), 50);
  // An open transaction is not expired (it holds the LSO until its marker).
  EXPECT_EQ(u.expire(1'000'000, 10), 0u);
}

TEST(TxnProducerStates, EveryProducerByIdWithItsOpenTransaction) {
  TempDir d;
  auto opened = PartitionLog::open(default_env(), d.path(), LogConfig{}, 0);
  ASSERT_TRUE(opened.ok());
  auto& log = **opened;
  EXPECT_TRUE(log.producer_states().empty());
  ASSERT_TRUE(append(log, data_batch(-1, -1, -1, false, 2)).ok());       // 0..1: no producer
  ASSERT_TRUE(append(log, data_batch(7, 2, 0, true, 3, 2000)).ok());     // 2..4: opens at 2
  ASSERT_TRUE(append(log, data_batch(4, 0, 0, false, 2, 3000)).ok());    // 5..6: idempotent
  ASSERT_TRUE(append(log, data_batch(7, 2, 3, true, 1, 4000)).ok());     // 7: same transaction
  ASSERT_TRUE(log.append_marker(9, 1, 0, /*commit=*/false, 5000).ok());  // 8: ends nothing
  auto states = log.producer_states();
  ASSERT_EQ(states.size(), 3u);
  EXPECT_EQ(states[0].producer_id, 4);
  EXPECT_EQ(states[0].txn_first_offset, -1);
  EXPECT_EQ(states[0].last()->last_seq, 1);
  EXPECT_EQ(states[1].producer_id, 7);
  EXPECT_EQ(states[1].epoch, 2);
  EXPECT_EQ(states[1].txn_first_offset, 2);
  EXPECT_EQ(states[1].last()->last_seq, 3);
  EXPECT_EQ(states[2].producer_id, 9);
  EXPECT_EQ(states[2].txn_first_offset, -1);
  EXPECT_EQ(states[2].last(), nullptr);  // a marker is no batch of the producer's
  ASSERT_TRUE(log.append_marker(7, 2, 0, /*commit=*/true, 6000).ok());
  EXPECT_EQ(log.producer_states()[1].txn_first_offset, -1);
}

TEST(TxnLso, EqualsTheHighWatermarkWithoutTransactions) {
  TempDir d;
  auto opened = PartitionLog::open(default_env(), d.path(), LogConfig{}, 0);
  ASSERT_TRUE(opened.ok());
  auto& log = **opened;
  ASSERT_TRUE(append(log, data_batch(-1, -1, -1, false, 3)).ok());
  ASSERT_TRUE(append(log, data_batch(5, 0, 0, false, 2)).ok());
  EXPECT_EQ(log.last_stable_offset(), log.high_watermark());
  EXPECT_EQ(log.last_stable_offset(), 5);
  EXPECT_TRUE(log.aborted_transactions(0, 5).empty());
}

TEST(TxnReplica, FollowerTakesMarkersAndTruncationReopensTheTransaction) {
  TempDir d;
  auto leader_open = PartitionLog::open(default_env(), d.sub("leader"), LogConfig{}, 0);
  ASSERT_TRUE(leader_open.ok());
  auto& leader = **leader_open;
  ASSERT_TRUE(append(leader, data_batch(1, 0, 0, true, 2)).ok());           // 0..1
  ASSERT_TRUE(append(leader, data_batch(2, 0, 0, true, 1)).ok());           // 2
  ASSERT_TRUE(leader.append_marker(1, 0, 3, /*commit=*/false, 1000).ok());  // 3
  ASSERT_TRUE(append(leader, data_batch(3, 0, 0, true, 1)).ok());           // 4
  const int64_t end = leader.log_end_offset();
  auto read = leader.read(0, 1 << 20, true, end);
  ASSERT_TRUE(read.ok());
  const std::vector<uint8_t> bytes = testing::read_bytes(*read);

  LogConfig replicated;
  replicated.replicated = true;
  const std::string dir = d.sub("follower");
  auto opened = PartitionLog::open(default_env(), dir, replicated, 0);
  ASSERT_TRUE(opened.ok());
  std::unique_ptr<PartitionLog> follower = std::move(*opened);
  ASSERT_TRUE(follower->append_as_follower(bytes, 1000).ok());
  EXPECT_EQ(follower->aborted_transactions(0, end), leader.aborted_transactions(0, end));
  EXPECT_EQ(follower->last_stable_offset(), 0);  // the high watermark is still the log start
  EXPECT_EQ(follower->advance_high_watermark(end), end);
  EXPECT_EQ(follower->last_stable_offset(), leader.last_stable_offset());
  EXPECT_EQ(follower->last_stable_offset(), 2);

  // The marker goes: producer 1's transaction is open again and its aborted entry is gone.
  ASSERT_TRUE(follower->truncate_to(3).ok());
  EXPECT_TRUE(follower->aborted_transactions(0, end).empty());
  EXPECT_EQ(follower->producer_state(1)->txn_first_offset, 0);
  EXPECT_EQ(follower->producer_state(2)->txn_first_offset, 2);
  EXPECT_FALSE(follower->producer_state(3).has_value());
  EXPECT_EQ(read_file_to_string(default_env(), segment_txn_index_path(dir, 0))->size(), 0u);
  follower.reset();  // a crash
  opened = PartitionLog::open(default_env(), dir, replicated, 0);
  ASSERT_TRUE(opened.ok());
  EXPECT_TRUE((*opened)->aborted_transactions(0, end).empty());
  EXPECT_EQ((*opened)->producer_state(1)->txn_first_offset, 0);
}

}  // namespace
}  // namespace strata::storage
