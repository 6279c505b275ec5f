// FaultInjectionFs (see fault_fs.h). The undo of a power loss works on the real files with
// std::filesystem: it is the "disk" going back to its durable state, not an operation RocksDB
// asked for.
#include "test/unit/pkindex/fault_fs.h"

#include <cstring>
#include <filesystem>
#include <system_error>

namespace strata::pkindex::testing {
namespace {

namespace stdfs = std::filesystem;

std::string normal(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  for (size_t i; (i = p.find("//")) != std::string::npos;) p.erase(i, 1);
  return p;
}
std::string parent(const std::string& p) {
  const size_t i = p.rfind('/');
  return i == std::string::npos ? std::string(".") : (i == 0 ? std::string("/") : p.substr(0, i));
}
bool under(const std::string& path, const std::string& root) {
  return path == root || (path.size() > root.size() && path.compare(0, root.size(), root) == 0 &&
                          path[root.size()] == '/');
}

class FaultWritableFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultWritableFile(FaultInjectionFs* fs, std::string path,
                    std::unique_ptr<rocksdb::FSWritableFile> base)
      : FSWritableFileOwnerWrapper(std::move(base)), fs_(fs), path_(std::move(path)) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) override {
    if (auto st = fs_->take_fault(FsOp::write, path_); !st.ok()) return st;
    return target()->Append(data, o, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                           const rocksdb::DataVerificationInfo& v,
                           rocksdb::IODebugContext* dbg) override {
    if (auto st = fs_->take_fault(FsOp::write, path_); !st.ok()) return st;
    return target()->Append(data, o, v, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     rocksdb::IODebugContext* dbg) override {
    if (auto st = fs_->take_fault(FsOp::write, path_); !st.ok()) return st;
    return target()->PositionedAppend(data, offset, o, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& o,
                                     const rocksdb::DataVerificationInfo& v,
                                     rocksdb::IODebugContext* dbg) override {
    if (auto st = fs_->take_fault(FsOp::write, path_); !st.ok()) return st;
    return target()->PositionedAppend(data, offset, o, v, dbg);
  }
  // A sync that fails syncs nothing: the fault is taken before the real call.
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto st = fs_->take_fault(FsOp::sync, path_); !st.ok()) return st;
    return synced(target()->Sync(o, dbg), o, dbg);
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto st = fs_->take_fault(FsOp::sync, path_); !st.ok()) return st;
    return synced(target()->Fsync(o, dbg), o, dbg);
  }
  // sync_file_range(2) is no durability barrier: the model ignores it.

 private:
  rocksdb::IOStatus synced(rocksdb::IOStatus st, const rocksdb::IOOptions& o,
                           rocksdb::IODebugContext* dbg) {
    if (!st.ok()) return st;
    fs_->on_synced(path_, target()->GetFileSize(o, dbg));
    return st;
  }
  FaultInjectionFs* fs_;
  std::string path_;
};

class FaultDirectory final : public rocksdb::FSDirectoryWrapper {
 public:
  FaultDirectory(FaultInjectionFs* fs, std::string path, std::unique_ptr<rocksdb::FSDirectory> d)
      : FSDirectoryWrapper(std::move(d)), fs_(fs), path_(std::move(path)) {}
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
    if (auto st = fs_->take_fault(FsOp::sync, path_); !st.ok()) return st;
    auto st = FSDirectoryWrapper::Fsync(o, dbg);
    if (st.ok()) fs_->on_dir_synced(path_);
    return st;
  }
  rocksdb::IOStatus FsyncWithDirOptions(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg,
                                        const rocksdb::DirFsyncOptions& d) override {
    if (auto st = fs_->take_fault(FsOp::sync, path_); !st.ok()) return st;
    auto st = FSDirectoryWrapper::FsyncWithDirOptions(o, dbg, d);
    if (st.ok()) fs_->on_dir_synced(path_);
    return st;
  }

 private:
  FaultInjectionFs* fs_;
  std::string path_;
};

}  // namespace

FaultInjectionFs::FaultInjectionFs(std::string trash_dir)
    : FileSystemWrapper(rocksdb::FileSystem::Default()), trash_dir_(normal(std::move(trash_dir))) {
  std::error_code ec;
  stdfs::create_directories(trash_dir_, ec);
}

std::string FaultInjectionFs::trash_name() {
  return trash_dir_ + "/" + std::to_string(++trash_seq_);
}

void FaultInjectionFs::rekey(const std::string& from, const std::string& to) {
  std::map<std::string, uint64_t> moved;
  for (auto it = synced_.begin(); it != synced_.end();) {
    if (under(it->first, from)) {
      moved[to + it->first.substr(from.size())] = it->second;
      it = synced_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [k, v] : moved) synced_[k] = v;
}

void FaultInjectionFs::finish(const Pending& p) {
  if (p.trash.empty()) return;
  std::error_code ec;
  stdfs::remove_all(p.trash, ec);
  for (auto it = synced_.begin(); it != synced_.end();) {
    it = under(it->first, p.trash) ? synced_.erase(it) : std::next(it);
  }
}

rocksdb::IOStatus FaultInjectionFs::take_fault(FsOp op, const std::string& path) {
  std::lock_guard lk(mu_);
  auto it = faults_.find(op);
  if (it == faults_.end() || it->second.count == 0) return rocksdb::IOStatus::OK();
  FsFault& f = it->second;
  if (!f.path_part.empty() && path.find(f.path_part) == std::string::npos) {
    return rocksdb::IOStatus::OK();
  }
  if (f.count > 0) --f.count;
  ++injected_;
  const std::string what = std::string("injected ") + std::strerror(f.err);
  if (op == FsOp::write && f.err == ENOSPC) return rocksdb::IOStatus::NoSpace(what, path);
  return rocksdb::IOStatus::IOError(what, path);
}

void FaultInjectionFs::inject(FsOp op, FsFault fault) {
  std::lock_guard lk(mu_);
  faults_[op] = std::move(fault);
}

void FaultInjectionFs::clear_faults() {
  std::lock_guard lk(mu_);
  faults_.clear();
}

int64_t FaultInjectionFs::injected_count() const {
  std::lock_guard lk(mu_);
  return injected_;
}

size_t FaultInjectionFs::pending_count() const {
  std::lock_guard lk(mu_);
  return pending_.size();
}

void FaultInjectionFs::on_synced(const std::string& path, uint64_t size) {
  std::lock_guard lk(mu_);
  synced_[path] = size;
}

void FaultInjectionFs::on_dir_synced(const std::string& dir_in) {
  const std::string dir = normal(dir_in);
  std::lock_guard lk(mu_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (parent(it->path) == dir) it->dir_synced = true;
    if (it->kind == Pending::rename && parent(it->from) == dir) it->from_dir_synced = true;
    const bool durable = it->dir_synced && (it->kind != Pending::rename || it->from_dir_synced);
    if (durable) {
      finish(*it);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

Status FaultInjectionFs::drop_unsynced_data() {
  std::lock_guard lk(mu_);
  std::error_code ec;
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    const Pending& p = *it;
    switch (p.kind) {
      case Pending::create:
        stdfs::remove_all(p.path, ec);
        for (auto s = synced_.begin(); s != synced_.end();) {
          s = under(s->first, p.path) ? synced_.erase(s) : std::next(s);
        }
        break;
      case Pending::remove:
        if (stdfs::exists(parent(p.path))) {
          stdfs::rename(p.trash, p.path, ec);
          rekey(p.trash, p.path);
        }
        break;
      case Pending::rename:
        stdfs::rename(p.path, p.from, ec);
        rekey(p.path, p.from);
        if (!p.trash.empty()) {
          stdfs::rename(p.trash, p.path, ec);
          rekey(p.trash, p.path);
        }
        break;
    }
    if (ec) return Status(Errc::io_error, "power loss undo of " + p.path + ": " + ec.message());
  }
  pending_.clear();
  for (const auto& [path, size] : synced_) {
    if (under(path, trash_dir_)) continue;
    const auto now = stdfs::file_size(path, ec);
    if (ec) {
      ec.clear();
      continue;
    }
    if (now > size) stdfs::resize_file(path, size, ec);
    if (ec) return Status(Errc::io_error, "power loss truncate of " + path + ": " + ec.message());
  }
  for (const auto& e : stdfs::directory_iterator(trash_dir_, ec)) stdfs::remove_all(e.path(), ec);
  return Status::Ok();
}

rocksdb::IOStatus FaultInjectionFs::NewWritableFile(const std::string& f_in,
                                                    const rocksdb::FileOptions& o,
                                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                    rocksdb::IODebugContext* dbg) {
  const std::string f = normal(f_in);
  if (auto st = take_fault(FsOp::open, f); !st.ok()) return st;
  const bool existed = stdfs::exists(f);
  std::unique_ptr<rocksdb::FSWritableFile> base;
  auto st = target()->NewWritableFile(f, o, &base, dbg);
  if (!st.ok()) return st;
  {
    std::lock_guard lk(mu_);
    synced_[f] = 0;  // truncated or new: nothing of it is durable yet
    if (!existed) pending_.push_back({Pending::create, f, "", ""});
  }
  r->reset(new FaultWritableFile(this, f, std::move(base)));
  return st;
}

rocksdb::IOStatus FaultInjectionFs::ReopenWritableFile(const std::string& f_in,
                                                       const rocksdb::FileOptions& o,
                                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                       rocksdb::IODebugContext* dbg) {
  const std::string f = normal(f_in);
  if (auto st = take_fault(FsOp::open, f); !st.ok()) return st;
  std::error_code ec;
  const bool existed = stdfs::exists(f);
  const uint64_t size = existed ? stdfs::file_size(f, ec) : 0;
  std::unique_ptr<rocksdb::FSWritableFile> base;
  auto st = target()->ReopenWritableFile(f, o, &base, dbg);
  if (!st.ok()) return st;
  {
    std::lock_guard lk(mu_);
    if (!existed) pending_.push_back({Pending::create, f, "", ""});
    if (!synced_.count(f)) synced_[f] = ec ? 0 : size;  // untracked: its content was durable
  }
  r->reset(new FaultWritableFile(this, f, std::move(base)));
  return st;
}

rocksdb::IOStatus FaultInjectionFs::ReuseWritableFile(const std::string& f, const std::string& old,
                                                      const rocksdb::FileOptions& o,
                                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                                      rocksdb::IODebugContext* dbg) {
  auto st = RenameFile(old, f, rocksdb::IOOptions(), dbg);
  if (!st.ok()) return st;
  return NewWritableFile(f, o, r, dbg);
}

rocksdb::IOStatus FaultInjectionFs::NewRandomRWFile(const std::string&, const rocksdb::FileOptions&,
                                                    std::unique_ptr<rocksdb::FSRandomRWFile>*,
                                                    rocksdb::IODebugContext*) {
  // Not used by PK state (no external SST ingestion, no file recycling); refusing keeps the model
  // honest instead of letting untracked writes through.
  return rocksdb::IOStatus::NotSupported("FaultInjectionFs: random read-write files");
}

rocksdb::IOStatus FaultInjectionFs::NewDirectory(const std::string& name,
                                                 const rocksdb::IOOptions& io,
                                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                                 rocksdb::IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSDirectory> base;
  auto st = target()->NewDirectory(name, io, &base, dbg);
  if (!st.ok()) return st;
  r->reset(new FaultDirectory(this, normal(name), std::move(base)));
  return st;
}

rocksdb::IOStatus FaultInjectionFs::DeleteFile(const std::string& f_in,
                                               const rocksdb::IOOptions& io,
                                               rocksdb::IODebugContext* dbg) {
  const std::string f = normal(f_in);
  if (!stdfs::is_regular_file(f)) return target()->DeleteFile(f, io, dbg);  // its own error
  std::lock_guard lk(mu_);
  const std::string trash = trash_name();
  auto st = target()->RenameFile(f, trash, io, dbg);
  if (!st.ok()) return st;
  rekey(f, trash);
  pending_.push_back({Pending::remove, f, "", trash});
  return st;
}

rocksdb::IOStatus FaultInjectionFs::DeleteDir(const std::string& d_in, const rocksdb::IOOptions& io,
                                              rocksdb::IODebugContext* dbg) {
  const std::string d = normal(d_in);
  std::error_code ec;
  if (!stdfs::is_directory(d) || !stdfs::is_empty(d, ec)) return target()->DeleteDir(d, io, dbg);
  std::lock_guard lk(mu_);
  const std::string trash = trash_name();
  auto st = target()->RenameFile(d, trash, io, dbg);
  if (!st.ok()) return st;
  pending_.push_back({Pending::remove, d, "", trash});
  return st;
}

rocksdb::IOStatus FaultInjectionFs::CreateDir(const std::string& d_in, const rocksdb::IOOptions& io,
                                              rocksdb::IODebugContext* dbg) {
  const std::string d = normal(d_in);
  auto st = target()->CreateDir(d, io, dbg);
  if (!st.ok()) return st;
  std::lock_guard lk(mu_);
  pending_.push_back({Pending::create, d, "", ""});
  return st;
}

rocksdb::IOStatus FaultInjectionFs::CreateDirIfMissing(const std::string& d,
                                                       const rocksdb::IOOptions& io,
                                                       rocksdb::IODebugContext* dbg) {
  if (stdfs::is_directory(normal(d))) return rocksdb::IOStatus::OK();
  return CreateDir(d, io, dbg);
}

rocksdb::IOStatus FaultInjectionFs::RenameFile(const std::string& s_in, const std::string& t_in,
                                               const rocksdb::IOOptions& io,
                                               rocksdb::IODebugContext* dbg) {
  const std::string s = normal(s_in);
  const std::string t = normal(t_in);
  std::lock_guard lk(mu_);
  std::string replaced;
  std::error_code ec;
  const bool full_dir = stdfs::is_directory(t) && !stdfs::is_empty(t, ec);
  if (stdfs::exists(t) && stdfs::exists(s) && !full_dir) {  // rename(2) replaces t at once
    replaced = trash_name();
    auto st = target()->RenameFile(t, replaced, io, dbg);
    if (!st.ok()) return st;
    rekey(t, replaced);
  }
  auto st = target()->RenameFile(s, t, io, dbg);
  if (!st.ok()) {
    if (!replaced.empty()) {
      std::error_code ec;
      stdfs::rename(replaced, t, ec);
      rekey(replaced, t);
    }
    return st;
  }
  rekey(s, t);
  pending_.push_back({Pending::rename, t, s, replaced});
  return st;
}

rocksdb::IOStatus FaultInjectionFs::LinkFile(const std::string& s, const std::string& t_in,
                                             const rocksdb::IOOptions& io,
                                             rocksdb::IODebugContext* dbg) {
  const std::string t = normal(t_in);
  auto st = target()->LinkFile(s, t, io, dbg);
  if (!st.ok()) return st;
  std::lock_guard lk(mu_);
  pending_.push_back({Pending::create, t, "", ""});
  return st;
}

rocksdb::IOStatus FaultInjectionFs::Truncate(const std::string& f_in, size_t size,
                                             const rocksdb::IOOptions& io,
                                             rocksdb::IODebugContext* dbg) {
  const std::string f = normal(f_in);
  auto st = target()->Truncate(f, size, io, dbg);
  if (!st.ok()) return st;
  std::lock_guard lk(mu_);
  if (auto it = synced_.find(f); it != synced_.end() && it->second > size) it->second = size;
  return st;
}

}  // namespace strata::pkindex::testing
