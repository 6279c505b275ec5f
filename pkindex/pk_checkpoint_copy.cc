// Listing, reading and installing checkpoint files for a new replica of a primary-key partition
// (layout in pk_checkpoint.h): the leader serves its newest checkpoint's files, the new replica
// writes them under `<offset>.tmp/` and renames the directory once all are durable, so a
// checkpoint that exists under its final name is complete, as with one taken locally.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "pkindex/pk_checkpoint.h"

namespace strata::pkindex::checkpoint {

namespace fs = std::filesystem;

namespace {
std::string path_of(const std::string& partition_dir, int64_t offset) {
  return dir_of(partition_dir) + "/" + name_of(offset);
}
std::string tmp_of(const std::string& partition_dir, int64_t offset) {
  return path_of(partition_dir, offset) + ".tmp";
}
bool plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}
}  // namespace

Result<std::vector<FileInfo>> files(const std::string& partition_dir, int64_t offset) {
  std::error_code ec;
  const std::string dir = path_of(partition_dir, offset);
  std::vector<FileInfo> out;
  fs::directory_iterator it(dir, ec);
  if (ec) return Status(Errc::not_found, "checkpoint " + dir + ": " + ec.message());
  for (const auto& e : it) {
    if (!e.is_regular_file(ec)) continue;
    const auto size = e.file_size(ec);
    if (ec) return Status(Errc::not_found, "checkpoint file " + e.path().string() + " is gone");
    out.push_back({e.path().filename().string(), static_cast<int64_t>(size)});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

Result<std::string> read_chunk(const std::string& partition_dir, int64_t offset,
                               const std::string& name, int64_t position, int32_t max_bytes) {
  if (!plain_name(name)) return Status(Errc::invalid_argument, "bad checkpoint file name");
  if (position < 0 || max_bytes <= 0) return Status(Errc::invalid_argument, "bad range");
  const std::string path = path_of(partition_dir, offset) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Errc::not_found, "checkpoint file " + path + " is gone");
  in.seekg(position);
  std::string out(static_cast<size_t>(max_bytes), '\0');
  in.read(out.data(), max_bytes);
  out.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return out;
}

Status install_begin(const std::string& partition_dir, int64_t offset) {
  std::error_code ec;
  const std::string tmp = tmp_of(partition_dir, offset);
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp, ec);
  if (ec) return Status(Errc::io_error, "create " + tmp + ": " + ec.message());
  return Status::Ok();
}

Status install_append(const std::string& partition_dir, int64_t offset, const std::string& name,
                      std::string_view data) {
  if (!plain_name(name)) return Status(Errc::invalid_argument, "bad checkpoint file name");
  const std::string path = tmp_of(partition_dir, offset) + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return Status(Errc::io_error, "write " + path + " failed");
  return Status::Ok();
}

Status install_commit(const std::string& partition_dir, int64_t offset) {
  std::error_code ec;
  const std::string tmp = tmp_of(partition_dir, offset);
  for (const auto& e : fs::directory_iterator(tmp, ec)) {
    STRATA_RETURN_IF_ERROR(fsync_path(e.path().string()));
  }
  if (ec) return Status(Errc::io_error, "list " + tmp + ": " + ec.message());
  STRATA_RETURN_IF_ERROR(fsync_path(tmp));
  const std::string final_path = path_of(partition_dir, offset);
  fs::remove_all(final_path, ec);  // an incomplete one cannot exist under this name; be sure
  fs::rename(tmp, final_path, ec);
  if (ec) return Status(Errc::io_error, "rename " + tmp + ": " + ec.message());
  return fsync_path(dir_of(partition_dir));
}

}  // namespace strata::pkindex::checkpoint
