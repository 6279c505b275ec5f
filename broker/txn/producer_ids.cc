// ProducerIdManager (see producer_ids.h).
#include "broker/txn/producer_ids.h"

#include <charconv>

#include "storage/file_util.h"

namespace strata::broker {

Result<std::unique_ptr<ProducerIdManager>> ProducerIdManager::open(storage::Env* env,
                                                                   std::string dir,
                                                                   int64_t block_size) {
  if (block_size < 1) return Status(Errc::invalid_argument, "producer id block size < 1");
  const std::string path = storage::join_path(dir, kFileName);
  int64_t first = 0;
  auto text = storage::read_file_to_string(env, path);
  if (text.ok()) {
    auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), first);
    if (ec != std::errc() || first < 0 || p == text->data() || *p != '\n') {
      return Status(Errc::corruption, path + " does not hold a producer id");
    }
  } else if (text.status().code() != Errc::not_found) {
    return text.status();
  }
  return std::unique_ptr<ProducerIdManager>(new ProducerIdManager(env, path, first, block_size));
}

Result<int64_t> ProducerIdManager::next() {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ >= block_end_) {
    const int64_t end = next_ + block_size_;
    STRATA_RETURN_IF_ERROR(storage::write_file_atomically(env_, path_, std::to_string(end) + "\n"));
    block_end_ = end;
  }
  return next_++;
}

}  // namespace strata::broker
