// FaultInjectionEnv (see fault_env.h).
#include "test/unit/storage/fault_env.h"

#include <algorithm>
#include <cerrno>

#include "storage/file_util.h"

namespace strata::storage::testing {
namespace {

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base)
      : env_(env), base_(std::move(base)) {}

  Status append(std::span<const uint8_t> data) override {
    Status st = env_->check("append", path());
    if (!st.ok()) {
      if (env_->torn_appends() && data.size() > 1) (void)base_->append(data.first(data.size() / 2));
      return st;
    }
    if (auto f = env_->take_fault(FaultOp::write, path())) {
      // A short write: the first bytes reach the file, then the OS reports the error.
      const size_t landed = data.empty() ? 0 : std::min(f->short_write, data.size() - 1);
      if (landed > 0) (void)base_->append(data.first(landed));
      return file_error("injected write", path(), f->err);
    }
    return base_->append(data);
  }
  Status sync() override {
    STRATA_RETURN_IF_ERROR(env_->check("sync", path()));
    if (auto f = env_->take_fault(FaultOp::sync, path())) {
      return sync_error("injected fsync", path(), f->err);
    }
    STRATA_RETURN_IF_ERROR(base_->sync());
    env_->on_synced(path(), base_->size());
    return Status::Ok();
  }
  Status truncate(uint64_t size) override {
    STRATA_RETURN_IF_ERROR(env_->check("truncate", path()));
    STRATA_RETURN_IF_ERROR(base_->truncate(size));
    env_->on_truncated(path(), size);
    return Status::Ok();
  }
  uint64_t size() const override { return base_->size(); }
  Status close() override { return base_->close(); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<WritableFile> base_;
};

}  // namespace

Status FaultInjectionEnv::check(std::string_view op, const std::string& path) {
  Hook hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++ops_;
    if (remaining_ == 0) {
      return Status(Errc::io_error, "injected fault at " + std::string(op) + " " + path);
    }
    if (remaining_ > 0) --remaining_;
    hook = hook_;
  }
  return hook ? hook(op, path) : Status::Ok();
}

void FaultInjectionEnv::on_synced(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  synced_[path] = size;
}

void FaultInjectionEnv::on_truncated(const std::string& path, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = synced_.find(path);
  if (it != synced_.end() && it->second > size) it->second = size;
}

bool FaultInjectionEnv::torn_appends() const {
  std::lock_guard<std::mutex> lock(mu_);
  return torn_;
}

std::optional<Fault> FaultInjectionEnv::take_fault(FaultOp op, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = faults_.find(op);
  if (it == faults_.end() || !path.ends_with(it->second.path_suffix)) return std::nullopt;
  Fault f = it->second;
  if (it->second.count > 0 && --it->second.count == 0) faults_.erase(it);
  ++injected_;
  return f;
}

void FaultInjectionEnv::inject(FaultOp op, Fault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fault.count == 0) {
    faults_.erase(op);
  } else {
    faults_[op] = std::move(fault);
  }
}

int64_t FaultInjectionEnv::injected_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return injected_;
}

void FaultInjectionEnv::fail_syncs(int64_t n, std::string path_suffix) {
  inject(FaultOp::sync, Fault{EIO, n, std::move(path_suffix), 0});
}

void FaultInjectionEnv::fail_after(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  remaining_ = n;
}

void FaultInjectionEnv::clear_faults() {
  std::lock_guard<std::mutex> lock(mu_);
  remaining_ = -1;
  hook_ = nullptr;
  torn_ = false;
  faults_.clear();
}

void FaultInjectionEnv::set_hook(Hook hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hook_ = std::move(hook);
}

void FaultInjectionEnv::set_torn_appends(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  torn_ = on;
}

int64_t FaultInjectionEnv::op_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_;
}

namespace {

// The base Env's reader, with its write-backs counted.
class CountingReader final : public RandomAccessFile {
 public:
  CountingReader(std::shared_ptr<RandomAccessFile> base, FaultInjectionEnv* env)
      : base_(std::move(base)), env_(env) {}
  Result<size_t> read(uint64_t offset, size_t n, uint8_t* dst) const override {
    return base_->read(offset, n, dst);
  }
  Result<uint64_t> size() const override { return base_->size(); }
  int fd() const override { return base_->fd(); }
  const std::string& path() const override { return base_->path(); }
  Status write_back() const override {
    env_->on_write_back(base_->path());
    return base_->write_back();
  }

 private:
  std::shared_ptr<RandomAccessFile> base_;
  FaultInjectionEnv* env_;
};

}  // namespace

Result<std::shared_ptr<RandomAccessFile>> FaultInjectionEnv::new_random_access_file(
    const std::string& path) {
  if (auto f = take_fault(FaultOp::open, path)) return file_error("injected open", path, f->err);
  auto base = base_->new_random_access_file(path);
  if (!base.ok()) return base.status();
  return std::shared_ptr<RandomAccessFile>(std::make_shared<CountingReader>(*base, this));
}

int64_t FaultInjectionEnv::write_backs(const std::string& path) const {
  std::lock_guard lk(mu_);
  auto it = write_backs_.find(path);
  return it == write_backs_.end() ? 0 : it->second;
}

void FaultInjectionEnv::on_write_back(const std::string& path) {
  std::lock_guard lk(mu_);
  ++write_backs_[path];
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::new_writable_file(const std::string& path,
                                                                           bool truncate) {
  STRATA_RETURN_IF_ERROR(check("new_writable_file", path));
  if (auto f = take_fault(FaultOp::open, path)) return file_error("injected open", path, f->err);
  const bool existed = base_->file_exists(path);
  auto file = base_->new_writable_file(path, truncate);
  if (!file.ok()) return file.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!existed) {
      synced_[path] = 0;
      pending_.push_back({PendingOp::create, path, "", std::nullopt, std::nullopt});
    } else if (truncate) {
      synced_[path] = 0;
    } else if (!synced_.contains(path)) {
      synced_[path] = (*file)->size();
    }
  }
  return std::unique_ptr<WritableFile>(new FaultWritableFile(this, std::move(*file)));
}

Status FaultInjectionEnv::truncate_file(const std::string& path, uint64_t size) {
  STRATA_RETURN_IF_ERROR(check("truncate", path));
  STRATA_RETURN_IF_ERROR(base_->truncate_file(path, size));
  on_truncated(path, size);
  return Status::Ok();
}

Status FaultInjectionEnv::rename_file(const std::string& from, const std::string& to) {
  STRATA_RETURN_IF_ERROR(check("rename", from));
  std::lock_guard<std::mutex> lock(mu_);
  PendingOp op{PendingOp::rename, to, from, std::nullopt, std::nullopt};
  if (base_->file_exists(to)) {
    auto old = read_file_to_string(base_, to);
    if (old.ok()) op.replaced_content = std::move(*old);
    auto it = synced_.find(to);
    if (it != synced_.end()) op.replaced_synced = it->second;
  }
  STRATA_RETURN_IF_ERROR(base_->rename_file(from, to));
  auto it = synced_.find(from);
  if (it != synced_.end()) {
    synced_[to] = it->second;
    synced_.erase(from);
  } else {
    synced_.erase(to);  // untracked source: its content counts as durable
  }
  pending_.push_back(std::move(op));
  return Status::Ok();
}

Status FaultInjectionEnv::remove_file(const std::string& path) {
  STRATA_RETURN_IF_ERROR(check("remove_file", path));
  std::lock_guard<std::mutex> lock(mu_);
  // Until its directory is fsynced the removal may be undone by a power loss: keep what of the
  // file was durable (all of an untracked file, the synced prefix of a tracked one).
  PendingOp op{PendingOp::remove, path, "", std::nullopt, std::nullopt};
  const bool created_unsynced = std::any_of(pending_.begin(), pending_.end(), [&](const auto& p) {
    return p.kind == PendingOp::create && p.path == path;
  });
  if (!created_unsynced) {
    auto old = read_file_to_string(base_, path);
    if (old.ok()) {
      auto it = synced_.find(path);
      if (it != synced_.end() && it->second < old->size()) old->resize(it->second);
      op.replaced_content = std::move(*old);
    }
  }
  STRATA_RETURN_IF_ERROR(base_->remove_file(path));
  synced_.erase(path);
  if (op.replaced_content) pending_.push_back(std::move(op));
  return Status::Ok();
}

Status FaultInjectionEnv::remove_dir_recursive(const std::string& path) {
  STRATA_RETURN_IF_ERROR(check("remove_dir", path));
  STRATA_RETURN_IF_ERROR(base_->remove_dir_recursive(path));
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = path + "/";
  std::erase_if(synced_, [&](const auto& kv) { return kv.first.starts_with(prefix); });
  std::erase_if(pending_, [&](const PendingOp& op) { return op.path.starts_with(prefix); });
  return Status::Ok();
}

Status FaultInjectionEnv::create_dir(const std::string& path) {
  STRATA_RETURN_IF_ERROR(check("create_dir", path));
  return base_->create_dir(path);
}

Status FaultInjectionEnv::sync_dir(const std::string& path) {
  STRATA_RETURN_IF_ERROR(check("sync_dir", path));
  STRATA_RETURN_IF_ERROR(base_->sync_dir(path));
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(pending_, [&](const PendingOp& op) { return parent_dir(op.path) == path; });
  return Status::Ok();
}

Status FaultInjectionEnv::drop_unsynced_data() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) {
    if (it->kind == PendingOp::create) {
      (void)base_->remove_file(it->path);
      synced_.erase(it->path);
      continue;
    }
    if (it->kind == PendingOp::remove) {  // the file comes back with its durable content
      if (!base_->is_directory(parent_dir(it->path))) continue;  // its directory is gone too
      auto f = base_->new_writable_file(it->path, /*truncate=*/true);
      if (!f.ok()) return f.status();
      const auto& c = *it->replaced_content;
      STRATA_RETURN_IF_ERROR((*f)->append({reinterpret_cast<const uint8_t*>(c.data()), c.size()}));
      STRATA_RETURN_IF_ERROR((*f)->close());
      synced_.erase(it->path);  // untracked again: all of it is durable
      continue;
    }
    // Undo a rename: the source name comes back, the target gets its old content (if any).
    if (base_->file_exists(it->path)) {
      STRATA_RETURN_IF_ERROR(base_->rename_file(it->path, it->from));
    }
    auto moved = synced_.find(it->path);
    if (moved != synced_.end()) {
      synced_[it->from] = moved->second;
      synced_.erase(it->path);
    }
    if (it->replaced_content) {
      auto f = base_->new_writable_file(it->path, /*truncate=*/true);
      if (!f.ok()) return f.status();
      const auto& c = *it->replaced_content;
      STRATA_RETURN_IF_ERROR((*f)->append({reinterpret_cast<const uint8_t*>(c.data()), c.size()}));
      STRATA_RETURN_IF_ERROR((*f)->close());
      if (it->replaced_synced) {
        synced_[it->path] = *it->replaced_synced;
      } else {
        synced_.erase(it->path);
      }
    }
  }
  pending_.clear();
  for (const auto& [path, size] : synced_) {
    auto current = base_->file_size(path);
    if (current.ok() && *current > size) {
      STRATA_RETURN_IF_ERROR(base_->truncate_file(path, size));
    }
  }
  return Status::Ok();
}

}  // namespace strata::storage::testing
