// Records: the value of a Kafka `records` field, zero-copy in both directions.
// Decoding yields one in-memory part viewing the request buffer (the caller keeps the buffer
// alive); responses may carry file ranges that the connection sends with sendfile/pread.
// Value type; thread-compatible (parts share ownership of the underlying memory/file).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace strata::protocol {

struct RecordsPart {                  // either in-memory bytes or a file range
  std::shared_ptr<const void> owner;  // keeps the memory/file alive (may be null)
  const uint8_t* data = nullptr;      // in-memory bytes, or nullptr for a file range
  int fd = -1;                        // file range (sent with sendfile / pread)
  uint64_t file_offset = 0;
  uint32_t length = 0;

  bool is_file() const { return data == nullptr && length > 0; }
};

struct Records {
  bool is_null = true;
  std::vector<RecordsPart> parts;

  uint32_t size() const {
    uint64_t total = 0;
    for (const auto& p : parts) total += p.length;
    return static_cast<uint32_t>(total);
  }
  // A non-null Records viewing `bytes` (no copy, no owner).
  static Records view(std::span<const uint8_t> bytes) {
    Records r;
    r.is_null = false;
    if (!bytes.empty())
      r.parts.push_back(
          RecordsPart{nullptr, bytes.data(), -1, 0, static_cast<uint32_t>(bytes.size())});
    return r;
  }
  // Equality by content: in-memory bytes compared byte by byte, file parts by (fd, offset, length).
  bool operator==(const Records& other) const;
};

}  // namespace strata::protocol
