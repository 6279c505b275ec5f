// ProducerIdManager: hands out idempotent-producer ids, unique across broker restarts. Ids are
// reserved in blocks (default 1000): before the first id of a block is handed out, the end of the
// block is persisted atomically in `<first log dir>/__strata_producer_ids` ("<next free id>\n", via
// storage::write_file_atomically), so a restart — clean or not — continues after every id that may
// have been handed out (at most one block of ids is skipped per restart, as with Kafka's
// ProducerIdManager blocks).
//
// Where blocks come from is a ProducerIdBlocks: this file on a single node, a compare-and-swap
// counter in etcd in a cluster (broker/cluster/producer_id_blocks.h), so ids are unique across
// brokers too.
//
// Owned by the Broker (one per process). Thread-safe: next() takes a mutex; the block reservation
// happens once per block under it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::broker {

// Reserves blocks of ids: returns the first id of a block [first, first + size) that nobody else
// was or will be given. Called under ProducerIdManager's mutex.
class ProducerIdBlocks {
 public:
  virtual ~ProducerIdBlocks() = default;
  virtual Result<int64_t> reserve(int64_t size) = 0;
};

class ProducerIdManager {
 public:
  static constexpr int64_t kDefaultBlockSize = 1000;
  static constexpr const char* kFileName = "__strata_producer_ids";

  // Reads the persisted next-free id from `dir` (0 when the file does not exist yet).
  static Result<std::unique_ptr<ProducerIdManager>> open(storage::Env* env, std::string dir,
                                                         int64_t block_size = kDefaultBlockSize);

  ProducerIdManager(std::unique_ptr<ProducerIdBlocks> blocks, int64_t block_size)
      : blocks_(std::move(blocks)), block_size_(block_size) {}

  // A fresh producer id; Errc::io_error when a new block cannot be reserved.
  Result<int64_t> next();

 private:
  const std::unique_ptr<ProducerIdBlocks> blocks_;
  std::mutex mu_;
  int64_t next_ = 0;       // the next id to hand out
  int64_t block_end_ = 0;  // ids below this are reserved
  const int64_t block_size_;
};

}  // namespace strata::broker
