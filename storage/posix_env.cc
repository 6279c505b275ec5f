// POSIX implementation of Env (see env.h).
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "storage/env.h"

namespace strata::storage {
namespace {

Status posix_error(const std::string& what, const std::string& path, int err) {
  return file_error(what, path, err);
}

// A std::filesystem error: its value is an errno when it comes from the OS.
Status fs_error(const std::string& what, const std::string& path, const std::error_code& ec) {
  if (ec.category() == std::generic_category() || ec.category() == std::system_category()) {
    return file_error(what, path, ec.value());
  }
  return Status(Errc::io_error, what + " " + path + ": " + ec.message());
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status append(std::span<const uint8_t> data) override {
    if (fd_ < 0) return Status(Errc::io_error, "append to closed file " + path_);
    const uint8_t* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(size_));
      if (n < 0) {
        if (errno == EINTR) continue;
        return posix_error("write", path_, errno);
      }
      p += n;
      left -= static_cast<size_t>(n);
      size_ += static_cast<uint64_t>(n);
    }
    return Status::Ok();
  }

  Status sync() override {
    if (fd_ < 0) return Status(Errc::io_error, "sync of closed file " + path_);
    if (::fdatasync(fd_) != 0) return sync_error("fdatasync", path_, errno);
    return Status::Ok();
  }

  Status truncate(uint64_t size) override {
    if (fd_ < 0) return Status(Errc::io_error, "truncate of closed file " + path_);
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0)
      return posix_error("ftruncate", path_, errno);
    size_ = size;
    return Status::Ok();
  }

  uint64_t size() const override { return size_; }

  Status close() override {
    if (fd_ < 0) return Status::Ok();
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return posix_error("close", path_, errno);
    return Status::Ok();
  }

  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Status write_back() const override {
    // Starts writeback of the whole file's dirty pages (nbytes 0 = to its end) and does not
    // wait, as RocksDB's range sync: waiting (WAIT_BEFORE / WAIT_AFTER) would check and advance
    // this descriptor's write-error cursor, marking an error seen, and a writer opened later
    // (a truncation's reopen, the open after a crash) would then fsync without hearing of it.
    while (::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE) != 0) {
      if (errno != EINTR) return posix_error("sync_file_range", path_, errno);
    }
    return Status::Ok();
  }

  Result<size_t> read(uint64_t offset, size_t n, uint8_t* dst) const override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return posix_error("pread", path_, errno);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }

  Result<uint64_t> size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return posix_error("fstat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

  int fd() const override { return fd_; }
  const std::string& path() const override { return path_; }

 private:
  std::string path_;
  int fd_;
};

class PosixEnv final : public Env {
 public:
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path,
                                                          bool truncate) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0);
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return posix_error("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return posix_error("fstat", path, err);
    }
    return std::unique_ptr<WritableFile>(
        new PosixWritableFile(path, fd, static_cast<uint64_t>(st.st_size)));
  }

  Result<std::shared_ptr<RandomAccessFile>> new_random_access_file(
      const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) return Status(Errc::not_found, "no file " + path);
      return posix_error("open", path, errno);
    }
    return std::shared_ptr<RandomAccessFile>(std::make_shared<PosixRandomAccessFile>(path, fd));
  }

  bool file_exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  bool is_directory(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  }

  Result<uint64_t> file_size(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status(Errc::not_found, "no file " + path);
      return posix_error("stat", path, errno);
    }
    return static_cast<uint64_t>(st.st_size);
  }

  Status truncate_file(const std::string& path, uint64_t size) override {
    if (::truncate(path.c_str(), static_cast<off_t>(size)) != 0) {
      return posix_error("truncate", path, errno);
    }
    return Status::Ok();
  }

  Status rename_file(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0)
      return posix_error("rename", from + " -> " + to, errno);
    return Status::Ok();
  }

  Status remove_file(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      if (errno == ENOENT) return Status(Errc::not_found, "no file " + path);
      return posix_error("unlink", path, errno);
    }
    return Status::Ok();
  }

  Status remove_dir_recursive(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return fs_error("remove_all", path, ec);
    return Status::Ok();
  }

  Status create_dir(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return fs_error("mkdir", path, ec);
    return Status::Ok();
  }

  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) return Status(Errc::not_found, "no directory " + path);
      return posix_error("opendir", path, errno);
    }
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names.emplace_back(e->d_name);
    }
    ::closedir(d);
    return names;
  }

  Status sync_dir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return posix_error("open dir", path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return sync_error("fsync dir", path, err);
    return Status::Ok();
  }
};

}  // namespace

Status file_error(std::string_view what, const std::string& path, int err) {
  Errc code = Errc::io_error;
  switch (err) {
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case EAGAIN:
    case EINTR:
      code = Errc::unavailable;
      break;
    case ENOSPC:
    case EDQUOT:
      code = Errc::no_space;
      break;
    default:
      break;
  }
  std::string msg(what);
  msg.append(" ").append(path).append(": ").append(std::strerror(err));
  return Status(code, std::move(msg));
}

Status sync_error(std::string_view what, const std::string& path, int err) {
  std::string msg(what);
  msg.append(" ").append(path).append(": ").append(std::strerror(err));
  return Status(Errc::io_error, std::move(msg));
}

Status undo_partial_append(WritableFile& file, uint64_t size, Status failure) {
  if (file.size() == size) return failure;
  Status cut = file.truncate(size);
  if (cut.ok()) return failure;
  return Status(Errc::io_error,
                failure.message() + "; cutting the partial write failed: " + cut.message());
}

Env* default_env() {
  static PosixEnv* env = new PosixEnv();  // never destroyed: files may outlive static destructors
  return env;
}

}  // namespace strata::storage
