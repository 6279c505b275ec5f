#include "tools/dump/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace strata::dump {

Result<std::unique_ptr<FileSource>> FileSource::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(Errc::io_error, "open " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return Status(Errc::io_error, "stat " + path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status(Errc::invalid_argument, path + " is not a regular file");
  }
  return std::unique_ptr<FileSource>(new FileSource(fd, static_cast<uint64_t>(st.st_size), path));
}

FileSource::~FileSource() { ::close(fd_); }

Status FileSource::read(uint64_t pos, std::span<uint8_t> out) const {
  if (pos > size_ || out.size() > size_ - pos) {
    return Status(Errc::out_of_range, path_ + ": read past the end");
  }
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(pos + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status(Errc::io_error, "read " + path_ + ": " + std::strerror(errno));
    }
    if (n == 0) return Status(Errc::io_error, path_ + ": file shrank while reading");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status MemorySource::read(uint64_t pos, std::span<uint8_t> out) const {
  if (pos > bytes_.size() || out.size() > bytes_.size() - pos) {
    return Status(Errc::out_of_range, "read past the end");
  }
  std::memcpy(out.data(), bytes_.data() + pos, out.size());
  return Status::Ok();
}

Result<std::vector<uint8_t>> read_small_file(const std::string& path, uint64_t max_bytes) {
  auto src = FileSource::open(path);
  if (!src.ok()) return src.status();
  if ((*src)->size() > max_bytes) {
    return Status(Errc::too_large, path + ": " + std::to_string((*src)->size()) +
                                       " bytes, more than the " + std::to_string(max_bytes) +
                                       " this tool reads");
  }
  std::vector<uint8_t> bytes((*src)->size());
  STRATA_RETURN_IF_ERROR((*src)->read(0, bytes));
  return bytes;
}

}  // namespace strata::dump
