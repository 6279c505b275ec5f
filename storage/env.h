// Env: the file-system seam every storage/ file operation goes through (LevelDB style).
//
// Production code uses default_env() (POSIX: write(2), pread(2), fdatasync(2), rename(2)). Tests
// wrap it (test/unit/storage/fault_env.h) to drop unsynced bytes, undo un-synced directory
// operations and fail chosen operations, so crash behaviour can be tested without killing a
// process.
//
// Ownership: default_env() is a process-wide singleton that lives forever. Files returned by the
// factory methods are owned by the caller. Thread-safety: Env methods are safe to call from any
// thread. A WritableFile is used by one thread at a time (the owner serialises); a RandomAccessFile
// may be read concurrently from many threads (pread does not move a shared file position).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/base/result.h"

namespace strata::storage {

// Append-only file. Writes go straight to the OS (no user-space buffer), so bytes appended are
// immediately visible to a RandomAccessFile opened on the same path; they are durable only after
// sync().
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(std::span<const uint8_t> data) = 0;
  // Makes every appended byte durable (fdatasync).
  virtual Status sync() = 0;
  // Shrinks (or extends with zeros) the file; later appends continue at `size`.
  virtual Status truncate(uint64_t size) = 0;
  virtual uint64_t size() const = 0;
  virtual Status close() = 0;
  virtual const std::string& path() const = 0;
};

// Positional reads of an immutable-prefix file; also exposes the descriptor for sendfile(2).
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at `offset` into dst; returns the number read (short only at end of file).
  virtual Result<size_t> read(uint64_t offset, size_t n, uint8_t* dst) const = 0;
  virtual Result<uint64_t> size() const = 0;
  // The OS descriptor (valid while this object lives), for zero-copy sends. -1 if not file-backed.
  virtual int fd() const = 0;
  virtual const std::string& path() const = 0;
  // Starts writing the file's dirty pages to the device, ahead of an fsync that would otherwise
  // write them all at once (sync_file_range, without waiting). Makes no durability claim and
  // consumes no write error: a writer's sync() is still what makes bytes durable and reports a
  // failed write. Default: nothing to write.
  virtual Status write_back() const { return Status::Ok(); }
};

class Env {
 public:
  virtual ~Env() = default;

  // Opens `path` for appending, creating it if missing. truncate=true empties an existing file.
  virtual Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                                  bool truncate) = 0;
  virtual Result<std::shared_ptr<RandomAccessFile>> new_random_access_file(
      const std::string& path) = 0;

  virtual bool file_exists(const std::string& path) = 0;
  virtual Result<uint64_t> file_size(const std::string& path) = 0;
  virtual Status truncate_file(const std::string& path, uint64_t size) = 0;
  // Atomically replaces `to` (POSIX rename semantics). Durable after sync_dir of the parent.
  virtual Status rename_file(const std::string& from, const std::string& to) = 0;
  virtual Status remove_file(const std::string& path) = 0;
  virtual Status remove_dir_recursive(const std::string& path) = 0;
  // Creates the directory (and missing parents); ok if it already exists.
  virtual Status create_dir(const std::string& path) = 0;
  // Names (not paths) of the entries in a directory, without "." and "..".
  virtual Result<std::vector<std::string>> list_dir(const std::string& path) = 0;
  virtual bool is_directory(const std::string& path) = 0;
  // Makes creations, renames and removals of entries in `path` durable (fsync on the directory).
  virtual Status sync_dir(const std::string& path) = 0;
};

// The POSIX environment (process-wide singleton).
Env* default_env();

// Error classes of file operations, decided where the errno is known (docs/storage.md, "Fault
// classes"):
//   Errc::unavailable  EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR: a passing shortage, worth retrying
//                      after a short pause;
//   Errc::no_space     ENOSPC, EDQUOT: nothing was lost, but writes fail until space is freed;
//   Errc::io_error     everything else (EIO, unknown errnos): the file's state is unknown.
// `what` names the operation ("write", "open", ...). Both this Env and the test Env use it, so
// both classify alike.
Status file_error(std::string_view what, const std::string& path, int err);
// A failed fsync/fdatasync is always Errc::io_error, whatever the errno: after it the kernel may
// have dropped the dirty pages (ENOSPC and EDQUOT included), so earlier writes may be lost.
Status sync_error(std::string_view what, const std::string& path, int err);
// Whether a failed file operation left nothing behind that a later attempt cannot fix
// (Errc::unavailable or Errc::no_space).
inline bool retriable_io(const Status& st) {
  return st.code() == Errc::unavailable || st.code() == Errc::no_space;
}
// After `file.append` failed with `failure`: cuts off whatever part of the write landed (a short
// write), so the file ends at `size` again and the next append starts on a record boundary.
// Returns `failure`, or Errc::io_error when the cut failed too (the file's end is then unknown).
Status undo_partial_append(WritableFile& file, uint64_t size, Status failure);

}  // namespace strata::storage
