// libFuzzer target: the Produce path of a record batch from arbitrary bytes — broker batch
// validation (prepare_batch: magic, CRC, codec, record structure, recompression, LogAppendTime)
// and, for what it accepts, a primary-key table's write (PkState::write: compute against RocksDB
// and the overlay, append to a real partition log, apply). The first byte picks the topic's
// codec / timestamp type and the table (three raw merge engines, a json last_row table, a json
// aggregation table: the typed-row decoder and merge); the rest is the batch, whose length and
// CRC are patched so the fuzzer reaches the records instead of failing the CRC check.
// Must not crash, trip a sanitizer or allocate without bound; the PK state must keep serving.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/topics/batch_validation.h"
#include "pkindex/pk_environment.h"
#include "pkindex/pk_state.h"
#include "protocol/record/batch_format.h"
#include "protocol/record/byte_order.h"
#include "protocol/record/crc32c.h"
#include "storage/env.h"
#include "storage/partition_log.h"

namespace {

namespace sp = strata::protocol;
namespace bf = strata::protocol::batch_format;

struct Table {
  std::unique_ptr<strata::storage::PartitionLog> log;
  std::unique_ptr<strata::pkindex::PkState> state;
};

// Never destroyed: closing RocksDB at exit would race librocksdb's own static teardown. The
// objects stay reachable, so the leak checker does not report them.
strata::pkindex::PkEnvironment& env() {
  static auto* e = new strata::pkindex::PkEnvironment;
  return *e;
}

constexpr int kTables = 5;

// One table per kind, opened once per process under a temporary directory.
Table& table(int engine) {
  strata::pkindex::PkEnvironment& shared_env = env();
  static auto* tables = new Table[kTables];
  static std::string root = [] {
    std::string t = (std::filesystem::temp_directory_path() / "strata-fuzz-XXXXXX").string();
    if (!::mkdtemp(t.data())) std::abort();
    return t;
  }();
  Table& t = tables[engine];
  if (!t.state) {
    auto log = strata::storage::PartitionLog::open(strata::storage::default_env(),
                                                   root + "/t-" + std::to_string(engine), {}, 1);
    if (!log.ok()) std::abort();
    t.log = std::move(*log);
    strata::pkindex::PkState::Options o;
    if (engine < 3) {
      o.table.merge_engine = static_cast<strata::pkindex::MergeEngine>(engine);
      if (engine == 2) o.table.version_header = "v";
      o.table.ttl_ms = engine == 1 ? 60000 : -1;
    } else {
      std::map<std::string, std::string> keys{{"table.type", "primary-key"},
                                              {"table.value.format", "json"},
                                              {"table.delete.behavior", "allow"}};
      if (engine == 4) {
        keys.insert({{"table.merge-engine", "aggregation"},
                     {"table.fields.n.agg", "sum"},
                     {"table.fields.p.agg", "product"},
                     {"table.fields.m.agg", "max"},
                     {"table.fields.s.agg", "listagg"},
                     {"table.fields.b.agg", "bool_or"},
                     {"table.fields.f.agg", "first_value"}});
      }
      auto cfg = strata::pkindex::parse_table_config(keys);
      if (!cfg.ok()) std::abort();
      o.table = *cfg;
    }
    auto s = strata::pkindex::PkState::open(shared_env, *t.log, o);
    if (!s.ok()) std::abort();
    t.state = std::move(*s);
  }
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t pick = data[0];
  std::vector<uint8_t> batch(data + 1, data + size);
  if (batch.size() >= bf::kHeaderSize) {
    sp::detail::store_be<uint32_t>(batch.data() + bf::kBatchLengthOffset,
                                   static_cast<uint32_t>(batch.size() - bf::kLogOverhead));
    batch[bf::kMagicOffset] = 2;
    const uint32_t crc = sp::crc32c(std::span<const uint8_t>(batch).subspan(bf::kCrcCoveredOffset));
    sp::detail::store_be<uint32_t>(batch.data() + bf::kCrcOffset, crc);
  }
  strata::broker::TopicConfig topic;
  topic.compression = static_cast<strata::broker::StoredCompression>(pick % 6);
  topic.log_append_time = (pick & 0x08) != 0;
  topic.max_message_bytes = 1 << 20;
  auto prepared = strata::broker::prepare_batch(batch, topic, 9, 1'700'000'000'000);
  if (prepared.error != sp::ErrorCode::none) return 0;
  Table& t = table((pick >> 4) % kTables);
  strata::pkindex::WriteInput in{sp::RecordBatchView(prepared.batch)};
  in.max_batch_bytes = strata::pkindex::changelog_batch_limit(topic.max_message_bytes);
  auto w = t.state->write(in, 1'700'000'000'000, [&](std::span<uint8_t> out) {
    return t.log->append(out, 1'700'000'000'000);
  });
  (void)w;
  if (t.state->overlay_size() != 0) __builtin_trap();  // nothing may stay half-written
  return 0;
}
