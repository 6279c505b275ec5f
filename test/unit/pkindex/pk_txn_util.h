// Test helpers for transactions on primary-key tables: a read_committed reading of a table's
// changelog that checks every change kind and before-image against the rows replayed so far.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "protocol/pk/change_headers.h"
#include "protocol/record/record_reader.h"
#include "storage/aborted_filter.h"
#include "storage/log_scan.h"
#include "storage/partition_log.h"

namespace strata::pkindex::testing {

using Rows = std::map<std::string, std::string>;

inline std::string to_str(std::span<const uint8_t> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}

// A read_committed reading of the whole log, as a consumer of the table's changelog: below the
// LSO, aborted transactions' batches skipped. Every change is checked against the rows replayed
// so far (kind, before-image); returns the replayed rows.
inline Rows replay_committed(const storage::PartitionLog& log) {
  Rows rows;
  const int64_t lso = log.last_stable_offset();
  const auto aborted = log.aborted_transactions(0, lso);
  Status st = storage::for_each_batch(
      log, log.log_start_offset(), lso, [&](const protocol::RecordBatchView& batch) {
        if (batch.is_control()) return Status::Ok();
        if (storage::in_aborted_transaction(aborted, batch)) return Status::Ok();
        auto reader = protocol::RecordReader::open(batch);
        EXPECT_TRUE(reader.ok());
        protocol::Record r;
        while (*reader->next(r)) {
          const std::string key = to_str(*r.key);
          std::string kind;
          std::optional<std::string> before;
          auto it = r.headers();
          protocol::Header h;
          while (it.next(h)) {
            if (h.key == protocol::pk::kChangeHeader) kind = to_str(*h.value);
            if (h.key == protocol::pk::kBeforeHeader) before = to_str(*h.value);
          }
          const auto cur = rows.find(key);
          const int64_t offset = reader->offset_of(r);
          if (kind == "insert") {
            EXPECT_EQ(cur, rows.end()) << "insert of a present key at " << offset;
            rows[key] = to_str(*r.value);
          } else if (kind == "update") {
            EXPECT_NE(cur, rows.end()) << "update of an absent key at " << offset;
            if (cur != rows.end()) {
              EXPECT_EQ(before, cur->second) << "before-image at " << offset;
            }
            rows[key] = to_str(*r.value);
          } else if (kind == "delete") {
            EXPECT_NE(cur, rows.end()) << "delete of an absent key at " << offset;
            if (cur != rows.end()) {
              EXPECT_EQ(before, cur->second) << "before-image at " << offset;
            }
            rows.erase(key);
          } else {
            EXPECT_EQ(kind, "none") << "at " << offset;
          }
        }
        return Status::Ok();
      });
  EXPECT_TRUE(st.ok()) << st.to_string();
  return rows;
}

}  // namespace strata::pkindex::testing
