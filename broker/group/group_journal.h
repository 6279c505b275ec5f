// GroupJournal: where the group coordinator writes its durable state and reads it back — the
// partitions of the consumer-offsets topic (LogGroupJournal, log_group_journal.h), or an
// in-memory fake in unit tests. A group lives in partition partition_for_group(id, partitions()),
// and the coordinator serves a group only while it owns (leads) that partition and has loaded it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/wire/errors.h"

namespace strata::broker::group {

// One record of a journal partition (group_records.h); nullopt value = tombstone.
struct JournalRecord {
  std::string key;
  std::optional<std::string> value;
};

// An upper bound of `r`'s encoded size inside a record batch: key and value, plus at most 32
// bytes of lengths, deltas, attributes and header count. Writes are sized by it to stay within
// the topic's max.message.bytes.
inline size_t encoded_bound(const JournalRecord& r) {
  return r.key.size() + (r.value ? r.value->size() : 0) + 32;
}

class GroupJournal {
 public:
  // `error` is what the coordinator answers (Kafka's mapping of append errors for group writes):
  // none, not_coordinator (no longer the partition's leader), coordinator_not_available (not
  // replicated in time, too few in-sync replicas), invalid_commit_offset_size (too large).
  // `last_offset` is the offset of the write's last record (orders completions of one key).
  using AppendDone = std::function<void(protocol::ErrorCode error, int64_t last_offset)>;

  virtual ~GroupJournal() = default;
  virtual int32_t partitions() const = 0;
  // True once partitions() can no longer change: the topic exists (its partition count is fixed,
  // CreatePartitions of it is refused), so the coordinator caches the count from then on.
  virtual bool partitions_fixed() const = 0;
  // Appends `records` to `partition` whole inside one batch (which may hold other writes too),
  // the writes of one partition in call order, and calls `done` once they are durable (in every
  // in-sync replica; fsynced on a single node) or failed. `done` never runs inside append() (the
  // caller may hold its lock), on any thread.
  virtual void append(int32_t partition, std::vector<JournalRecord> records, AppendDone done) = 0;
  // The most one write may hold, counted by encoded_bound(), and still fit one batch under the
  // topic's max.message.bytes: a writer that may split (tombstones) keeps its writes within it.
  // May be 0, or less than one record's bound (a tiny max.message.bytes): such writes fail.
  virtual size_t max_write_bytes() const = 0;
  // Calls `fn` for every record of `partition` in log order, on the calling thread.
  virtual Status replay(int32_t partition,
                        const std::function<Status(const JournalRecord&)>& fn) = 0;
  // Runs `fn` off the network threads (a partition's load may read a large log).
  virtual void run_async(std::function<void()> fn) = 0;
};

}  // namespace strata::broker::group
