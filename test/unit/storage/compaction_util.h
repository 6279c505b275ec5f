// Helpers for the retention and cleaner tests: keyed batches and a record-level dump of a log.
// Test-only; single-threaded use.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/partition_log.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage::testing {

struct KV {
  std::string key;
  std::optional<std::string> value;  // nullopt = tombstone
  int64_t ts = 1000;
};

struct ProducerFields {
  int64_t id = -1;
  int16_t epoch = -1;
  int32_t base_sequence = -1;
};

inline std::vector<uint8_t> make_keyed_batch(const std::vector<KV>& kvs, ProducerFields p = {},
                                             codec::Compression c = codec::Compression::none) {
  protocol::RecordBatchBuilder b(c);
  b.set_producer(p.id, p.epoch, p.base_sequence);
  for (const auto& kv : kvs) {
    std::span<const uint8_t> k(reinterpret_cast<const uint8_t*>(kv.key.data()), kv.key.size());
    std::optional<std::span<const uint8_t>> v;
    if (kv.value)
      v = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(kv.value->data()),
                                   kv.value->size());
    b.add(kv.ts, k, v);
  }
  return b.build();
}

inline int64_t append_kv(PartitionLog& log, const std::vector<KV>& kvs, ProducerFields p = {},
                         codec::Compression c = codec::Compression::none, int64_t now_ms = 0) {
  auto batch = make_keyed_batch(kvs, p, c);
  auto r = log.append(batch, now_ms);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? r->base_offset : -1;
}

struct StoredRecord {
  int64_t offset;
  std::optional<std::string> key;
  std::optional<std::string> value;
  int64_t timestamp;
  bool operator==(const StoredRecord&) const = default;
};

struct StoredBatch {
  int64_t base_offset, last_offset;
  int64_t producer_id;
  int16_t producer_epoch;
  int32_t base_sequence;
  int32_t record_count;
  bool delete_horizon;
};

// Every record from the log start to the high watermark, checking batch validity and increasing
// offsets. `batches` (optional) receives the batch headers.
inline std::vector<StoredRecord> dump_log(const PartitionLog& log,
                                          std::vector<StoredBatch>* batches = nullptr) {
  std::vector<StoredRecord> out;
  auto r = log.read(log.log_start_offset(), 1u << 30, true, log.high_watermark());
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return out;
  auto bytes = read_bytes(*r);
  std::span<const uint8_t> rest(bytes);
  int64_t prev_last = -1;
  protocol::Record rec;
  while (!rest.empty()) {
    size_t n = protocol::peek_batch_size(rest);
    EXPECT_TRUE(n > 0 && n <= rest.size());
    if (n == 0 || n > rest.size()) break;
    protocol::RecordBatchView v(rest.first(n));
    EXPECT_EQ(v.validate(), protocol::BatchCheck::ok);
    EXPECT_GT(v.base_offset(), prev_last);
    prev_last = v.last_offset();
    if (batches) {
      batches->push_back({v.base_offset(), v.last_offset(), v.producer_id(), v.producer_epoch(),
                          v.base_sequence(), v.record_count(), v.has_delete_horizon()});
    }
    auto reader = protocol::RecordReader::open(v);
    EXPECT_TRUE(reader.ok());
    if (!reader.ok()) break;
    for (;;) {
      auto more = reader->next(rec);
      EXPECT_TRUE(more.ok());
      if (!more.ok() || !*more) break;
      StoredRecord s{reader->offset_of(rec), std::nullopt, std::nullopt, reader->timestamp_of(rec)};
      if (rec.key)
        s.key = std::string(reinterpret_cast<const char*>(rec.key->data()), rec.key->size());
      if (rec.value) {
        s.value = std::string(reinterpret_cast<const char*>(rec.value->data()), rec.value->size());
      }
      EXPECT_LE(s.offset, v.last_offset());
      out.push_back(std::move(s));
    }
    rest = rest.subspan(n);
  }
  for (size_t i = 1; i < out.size(); ++i) EXPECT_LT(out[i - 1].offset, out[i].offset);
  return out;
}

// key -> latest record (tombstones included).
inline std::map<std::string, StoredRecord> latest_by_key(const std::vector<StoredRecord>& records) {
  std::map<std::string, StoredRecord> m;
  for (const auto& r : records) {
    if (r.key) m.insert_or_assign(*r.key, r);
  }
  return m;
}

}  // namespace strata::storage::testing
