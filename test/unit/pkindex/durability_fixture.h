// The fixture of the primary-key durability tests (pk_durability_test.cc, pk_power_loss_test.cc):
// a partition log on storage's FaultInjectionEnv and its state on a FaultInjectionFs, writes
// through the produce path, a model of the rows computed from the test's own inputs, and crash()
// = a power loss reaching both. Test-only.
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "pkindex/pk_checkpoint.h"
#include "pkindex/pk_files.h"
#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"
#include "pkindex/table_config.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"
#include "test/unit/pkindex/fault_fs.h"
#include "test/unit/pkindex/pk_write_util.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::pkindex::durability_testing {

using namespace protocol::pk;  // wire facts: change headers, partitioners
namespace fs = std::filesystem;
using protocol::Header;

inline std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
// prefix + number (avoids a GCC 12 -Wrestrict false positive with operator+).
inline std::string cat(const char* prefix, int64_t n) {
  std::string s(prefix);
  s += std::to_string(n);
  return s;
}
inline std::string str(std::span<const uint8_t> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

using Write = std::pair<std::string, std::optional<std::string>>;  // key, value (nullopt = delete)

struct OutRecord {
  std::string kind;
  std::optional<int64_t> append_time;
  bool has_before = false;
};

class DurabilityTest : public ::testing::Test {
 protected:
  void open_log() {
    auto log = storage::PartitionLog::open(&fenv_, dir(), {}, 1);
    ASSERT_TRUE(log.ok()) << log.status().to_string();
    log_ = std::move(*log);
  }
  Status open_state() {
    auto s = PkState::open(env_, *log_, options_);
    if (!s.ok()) return s.status();
    state_ = std::move(*s);
    return Status::Ok();
  }
  void open_all() {
    open_log();
    Status st = open_state();
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  std::string dir() const { return tmp_.sub(dir_name_); }

  // compute -> append -> apply; remembers each record's offset for the model.
  std::vector<OutRecord> write(const std::vector<Write>& ws) {
    protocol::RecordBatchBuilder bb;
    for (const auto& [k, v] : ws) {
      std::optional<std::span<const uint8_t>> value;
      if (v) value = b(*v);
      bb.add(1000, b(k), value, {});
    }
    auto input = bb.build();
    auto w = testing::write_through(*state_, *log_, input, 1);
    EXPECT_TRUE(w.ok()) << w.result.status.to_string();
    const int64_t base = w.result.appended.base_offset;
    for (size_t i = 0; i < ws.size(); ++i) history_[base + static_cast<int64_t>(i)] = ws[i];
    // Decode the output for kinds / append times.
    std::vector<OutRecord> out;
    protocol::RecordBatchView v(w.batch);
    auto r = protocol::RecordReader::open(v);
    protocol::Record rec;
    while (*r->next(rec)) {
      OutRecord o;
      auto it = rec.headers();
      Header h;
      while (it.next(h)) {
        if (h.key == kChangeHeader) o.kind = str(*h.value);
        if (h.key == kBeforeHeader) o.has_before = true;
        if (h.key == kAppendTimeHeader) o.append_time = row_format::get_be64(h.value->data());
      }
      out.push_back(o);
    }
    return out;
  }
  // The independent model: every write of the test at an offset below `end`, last one wins.
  std::map<std::string, std::string> model(int64_t end) const {
    std::map<std::string, std::string> m;
    for (const auto& [off, w] : history_) {
      if (off >= end) break;
      if (w.second) {
        m[w.first] = *w.second;
      } else {
        m.erase(w.first);
      }
    }
    return m;
  }
  void expect_matches_model(const std::vector<std::string>& keys) {
    const int64_t end = log_->log_end_offset();
    EXPECT_LT(state_->applied_offset(), end) << "state ahead of the log";
    EXPECT_EQ(state_->applied_offset(), end - 1) << "replay did not reach the log end";
    auto m = model(end);
    for (const auto& k : keys) {
      auto r = state_->lookup(b(k));
      ASSERT_TRUE(r.ok());
      auto it = m.find(k);
      if (it == m.end()) {
        EXPECT_FALSE(r->found) << "key " << k;
      } else {
        EXPECT_TRUE(r->found) << "key " << k;
        EXPECT_EQ(r->value, it->second) << "key " << k;
      }
    }
  }
  // Power loss: the memtable is dropped (flush_on_close=false), the log and RocksDB's files lose
  // what was never synced, and directory changes never fsynced are undone.
  void crash() {
    ASSERT_TRUE(state_->close().ok());
    state_.reset();
    log_.reset();
    fenv_.clear_faults();
    ffs_->clear_faults();
    ASSERT_TRUE(fenv_.drop_unsynced_data().ok());
    ASSERT_TRUE(ffs_->drop_unsynced_data().ok());
  }
  static PkEnvironment::Options on(std::shared_ptr<testing::FaultInjectionFs> fs) {
    PkEnvironment::Options o;
    o.file_system = std::move(fs);
    return o;
  }

  storage::testing::TempDir tmp_;
  storage::testing::FaultInjectionEnv fenv_;  // the log's files
  std::shared_ptr<testing::FaultInjectionFs> ffs_ =
      std::make_shared<testing::FaultInjectionFs>(tmp_.sub(".power-loss-trash"));  // kv*/ files
  PkEnvironment env_{on(ffs_)};
  std::unique_ptr<storage::PartitionLog> log_;
  PkState::Options options_;
  std::unique_ptr<PkState> state_;
  std::map<int64_t, Write> history_;
  std::string dir_name_ = "t-0";
};

inline std::vector<std::string> keys_k(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(cat("k", i));
  return v;
}

}  // namespace strata::pkindex::durability_testing
