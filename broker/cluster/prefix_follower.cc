// PrefixFollower (see prefix_follower.h).
#include "broker/cluster/prefix_follower.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace strata::broker::cluster {

PrefixFollower::PrefixFollower(Coordination& coordination, std::string prefix, Handlers handlers,
                               std::string name)
    : coordination_(coordination),
      prefix_(std::move(prefix)),
      handlers_(std::move(handlers)),
      name_(std::move(name)) {}

PrefixFollower::~PrefixFollower() { stop(); }

Status PrefixFollower::start() {
  std::lock_guard lk(watch_mu_);
  if (stopped_) return Status(Errc::invalid_argument, name_ + ": follower already stopped");
  return load_and_watch();
}

void PrefixFollower::stop() {
  std::unique_ptr<Watch> w;
  {
    std::lock_guard lk(watch_mu_);
    stopped_ = true;
    w = std::move(watch_);
  }
  stop_cv_.notify_all();
  // Not under watch_mu_: cancel() waits for a running callback, which may be joining a re-read
  // that waits for watch_mu_.
  if (w) w->cancel();
  std::lock_guard guard(rewatch_mu_);
  if (rewatch_.joinable()) rewatch_.join();
}

Status PrefixFollower::load_and_watch() {
  auto all = coordination_.range(prefix_, prefix_end(prefix_));
  if (!all.ok()) return all.status();
  handlers_.reset(*all);
  advance(all->revision);
  auto w = coordination_.watch(prefix_, prefix_end(prefix_), all->revision + 1,
                               [this](const WatchBatch& b) { on_batch(b); });
  if (!w.ok()) return w.status();
  watch_ = std::move(*w);
  return Status::Ok();
}

void PrefixFollower::on_batch(const WatchBatch& batch) {
  if (batch.compact_revision > 0) {
    // The history this watch needed is gone and the watch has ended: re-read and watch again,
    // off this (ending) thread, which the re-read cancels.
    spdlog::warn("{}: etcd history compacted at revision {}; re-reading", name_,
                 batch.compact_revision);
    std::lock_guard guard(rewatch_mu_);
    if (rewatch_.joinable()) rewatch_.join();  // the previous re-read finished long ago
    rewatch_ = std::thread([this] { rewatch(); });
    return;
  }
  handlers_.apply(batch.events);
  int64_t revision = batch.revision;
  for (const auto& e : batch.events) revision = std::max(revision, e.kv.mod_revision);
  advance(revision);
}

void PrefixFollower::rewatch() {
  std::unique_lock lk(watch_mu_);
  for (int attempt = 0;; ++attempt) {
    if (stopped_) return;
    if (std::unique_ptr<Watch> old = std::move(watch_)) old->cancel();
    Status st = load_and_watch();
    if (st.ok()) return;
    spdlog::warn("{}: re-read failed ({}); retrying", name_, st.to_string());
    stop_cv_.wait_for(lk, std::chrono::milliseconds(100 << std::min(attempt, 4)),
                      [&] { return stopped_; });
  }
}

void PrefixFollower::advance(int64_t revision) {
  {
    std::lock_guard lk(rev_mu_);
    applied_revision_ = std::max(applied_revision_, revision);
  }
  rev_cv_.notify_all();
}

bool PrefixFollower::wait_for(int64_t revision, std::chrono::milliseconds timeout) const {
  std::unique_lock lk(rev_mu_);
  return rev_cv_.wait_for(lk, timeout, [&] { return applied_revision_ >= revision; });
}

int64_t PrefixFollower::applied_revision() const {
  std::lock_guard lk(rev_mu_);
  return applied_revision_;
}

std::string_view PrefixFollower::relative(std::string_view key) const {
  if (key.substr(0, prefix_.size()) != prefix_) return {};
  return key.substr(prefix_.size());
}

}  // namespace strata::broker::cluster
