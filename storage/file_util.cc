// Whole-file helpers (see file_util.h).
#include "storage/file_util.h"

#include <sstream>
#include <vector>

namespace strata::storage {

std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string join_path(const std::string& dir, std::string_view name) {
  std::string out = dir;
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

Status write_file_atomically(Env* env, const std::string& path, std::string_view data) {
  const std::string tmp = path + ".tmp";
  auto file = env->new_writable_file(tmp, /*truncate=*/true);
  if (!file.ok()) return file.status();
  auto& f = *file;
  STRATA_RETURN_IF_ERROR(f->append({reinterpret_cast<const uint8_t*>(data.data()), data.size()}));
  STRATA_RETURN_IF_ERROR(f->sync());
  STRATA_RETURN_IF_ERROR(f->close());
  STRATA_RETURN_IF_ERROR(env->rename_file(tmp, path));
  return env->sync_dir(parent_dir(path));
}

Result<std::string> read_file_to_string(Env* env, const std::string& path) {
  auto file = env->new_random_access_file(path);
  if (!file.ok()) return file.status();
  auto size = (*file)->size();
  if (!size.ok()) return size.status();
  std::string out(*size, '\0');
  auto n = (*file)->read(0, out.size(), reinterpret_cast<uint8_t*>(out.data()));
  if (!n.ok()) return n.status();
  out.resize(*n);
  return out;
}

Result<std::vector<std::string>> read_line_file(Env* env, const std::string& path) {
  std::vector<std::string> lines;
  auto text = read_file_to_string(env, path);
  if (!text.ok()) {
    if (text.status().code() == Errc::not_found) return lines;
    return text.status();
  }
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace strata::storage
