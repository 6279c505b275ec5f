// ByteSource: random-access read-only bytes for strata-dump, either a file (pread, never mmap, so
// a file shrinking underneath cannot raise SIGBUS) or an in-memory buffer (unit tests).
//
// Owned by strata-dump (tools/dump). A source is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::dump {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Reads exactly out.size() bytes at `pos`; fails (Errc::io_error / out_of_range) otherwise.
  virtual Status read(uint64_t pos, std::span<uint8_t> out) const = 0;
};

class FileSource final : public ByteSource {
 public:
  static Result<std::unique_ptr<FileSource>> open(const std::string& path);
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  uint64_t size() const override { return size_; }
  Status read(uint64_t pos, std::span<uint8_t> out) const override;

 private:
  FileSource(int fd, uint64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}
  int fd_;
  uint64_t size_;
  std::string path_;
};

class MemorySource final : public ByteSource {
 public:
  explicit MemorySource(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  Status read(uint64_t pos, std::span<uint8_t> out) const override;

 private:
  std::vector<uint8_t> bytes_;
};

// Reads a whole (small) file, e.g. an index; fails on files over `max_bytes`.
Result<std::vector<uint8_t>> read_small_file(const std::string& path, uint64_t max_bytes);

}  // namespace strata::dump
