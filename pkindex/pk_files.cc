#include "pkindex/pk_files.h"

#include <rocksdb/file_system.h>

#include <memory>

namespace strata::pkindex::files {

namespace {

Status to_status(const rocksdb::IOStatus& st, const std::string& what) {
  if (st.ok()) return Status::Ok();
  return Status(st.IsNoSpace() ? Errc::no_space : Errc::io_error, what + ": " + st.ToString());
}

bool is_dir(rocksdb::FileSystem& fs, const std::string& path) {
  bool d = false;
  return fs.IsDirectory(path, rocksdb::IOOptions(), &d, nullptr).ok() && d;
}

}  // namespace

bool exists(rocksdb::FileSystem& fs, const std::string& path) {
  return fs.FileExists(path, rocksdb::IOOptions(), nullptr).ok();
}

Result<std::vector<std::string>> children(rocksdb::FileSystem& fs, const std::string& dir) {
  std::vector<std::string> out;
  if (!exists(fs, dir)) return out;
  rocksdb::IOStatus st = fs.GetChildren(dir, rocksdb::IOOptions(), &out, nullptr);
  if (!st.ok()) return to_status(st, "list " + dir);
  std::erase_if(out, [](const std::string& n) { return n == "." || n == ".."; });
  return out;
}

Status create_dir(rocksdb::FileSystem& fs, const std::string& dir) {
  return to_status(fs.CreateDirIfMissing(dir, rocksdb::IOOptions(), nullptr), "create " + dir);
}

Status remove_all(rocksdb::FileSystem& fs, const std::string& path) {
  if (!exists(fs, path)) return Status::Ok();
  if (!is_dir(fs, path)) {
    return to_status(fs.DeleteFile(path, rocksdb::IOOptions(), nullptr), "remove " + path);
  }
  auto names = children(fs, path);
  if (!names.ok()) return names.status();
  for (const auto& n : *names) STRATA_RETURN_IF_ERROR(remove_all(fs, path + "/" + n));
  return to_status(fs.DeleteDir(path, rocksdb::IOOptions(), nullptr), "remove " + path);
}

Status rename(rocksdb::FileSystem& fs, const std::string& from, const std::string& to) {
  return to_status(fs.RenameFile(from, to, rocksdb::IOOptions(), nullptr),
                   "rename " + from + " to " + to);
}

Status sync_dir(rocksdb::FileSystem& fs, const std::string& dir) {
  std::unique_ptr<rocksdb::FSDirectory> d;
  rocksdb::IOStatus st = fs.NewDirectory(dir, rocksdb::IOOptions(), &d, nullptr);
  if (st.ok()) st = d->Fsync(rocksdb::IOOptions(), nullptr);
  if (st.ok()) st = d->Close(rocksdb::IOOptions(), nullptr);
  // Like a failed file fsync, a failed directory fsync leaves the entries' durability unknown.
  if (!st.ok()) return Status(Errc::io_error, "fsync " + dir + ": " + st.ToString());
  return Status::Ok();
}

Status copy_file(rocksdb::FileSystem& fs, const std::string& from, const std::string& to,
                 bool link) {
  const rocksdb::IOOptions io;
  if (link && fs.LinkFile(from, to, io, nullptr).ok()) return Status::Ok();  // one inode, synced
  std::unique_ptr<rocksdb::FSSequentialFile> in;
  rocksdb::IOStatus st = fs.NewSequentialFile(from, rocksdb::FileOptions(), &in, nullptr);
  if (!st.ok()) return to_status(st, "open " + from);
  std::unique_ptr<rocksdb::FSWritableFile> out;
  st = fs.NewWritableFile(to, rocksdb::FileOptions(), &out, nullptr);
  if (!st.ok()) return to_status(st, "create " + to);
  std::string buf(1 << 20, '\0');
  for (;;) {
    rocksdb::Slice got;
    st = in->Read(buf.size(), io, &got, buf.data(), nullptr);
    if (!st.ok()) return to_status(st, "read " + from);
    if (got.empty()) break;
    st = out->Append(got, io, nullptr);
    if (!st.ok()) return to_status(st, "write " + to);
  }
  st = out->Sync(io, nullptr);
  if (!st.ok()) return Status(Errc::io_error, "fsync " + to + ": " + st.ToString());
  return to_status(out->Close(io, nullptr), "close " + to);
}

}  // namespace strata::pkindex::files
