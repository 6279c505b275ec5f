// ProducerIdManager: hands out idempotent-producer ids, unique across broker restarts. Ids are
// reserved in blocks (default 1000): before the first id of a block is handed out, the end of the
// block is persisted atomically in `<first log dir>/__strata_producer_ids` ("<next free id>\n", via
// storage::write_file_atomically), so a restart — clean or not — continues after every id that may
// have been handed out (at most one block of ids is skipped per restart, as with Kafka's
// ProducerIdManager blocks).
//
// Owned by the Broker (one per process). Thread-safe: next() takes a mutex; the file write happens
// once per block under it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::broker {

class ProducerIdManager {
 public:
  static constexpr int64_t kDefaultBlockSize = 1000;
  static constexpr const char* kFileName = "__strata_producer_ids";

  // Reads the persisted next-free id from `dir` (0 when the file does not exist yet).
  static Result<std::unique_ptr<ProducerIdManager>> open(storage::Env* env, std::string dir,
                                                         int64_t block_size = kDefaultBlockSize);

  // A fresh producer id; Errc::io_error when a new block cannot be persisted.
  Result<int64_t> next();

 private:
  ProducerIdManager(storage::Env* env, std::string path, int64_t first, int64_t block_size)
      : env_(env),
        path_(std::move(path)),
        next_(first),
        block_end_(first),
        block_size_(block_size) {}

  storage::Env* const env_;
  const std::string path_;
  std::mutex mu_;
  int64_t next_;       // the next id to hand out
  int64_t block_end_;  // ids below this are reserved on disk
  const int64_t block_size_;
};

}  // namespace strata::broker
