// ProducerIdManager (see producer_ids.h).
#include "broker/txn/producer_ids.h"

#include <charconv>

#include "storage/file_util.h"

namespace strata::broker {

namespace {

// The single-node source: "<next free id>\n" in a file, rewritten atomically per block.
class FileBlocks : public ProducerIdBlocks {
 public:
  FileBlocks(storage::Env* env, std::string path, int64_t next)
      : env_(env), path_(std::move(path)), next_(next) {}
  Result<int64_t> reserve(int64_t size) override {
    const int64_t first = next_;
    STRATA_RETURN_IF_ERROR(
        storage::write_file_atomically(env_, path_, std::to_string(first + size) + "\n"));
    next_ = first + size;
    return first;
  }

 private:
  storage::Env* const env_;
  const std::string path_;
  int64_t next_;
};

}  // namespace

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
  return std::make_unique<ProducerIdManager>(std::make_unique<FileBlocks>(env, path, first),
                                             block_size);
}

Result<int64_t> ProducerIdManager::next() {
  std::lock_guard<std::mutex> lock(mu_);
  if (next_ >= block_end_) {
    auto first = blocks_->reserve(block_size_);
    if (!first.ok()) return first.status();
    next_ = *first;
    block_end_ = *first + block_size_;
  }
  return next_++;
}

}  // namespace strata::broker
