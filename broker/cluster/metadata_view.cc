#include "broker/cluster/metadata_view.h"

#include <spdlog/spdlog.h>

#include <thread>

namespace strata::broker::cluster {

const VersionedPartition* ClusterSnapshot::partition(const std::string& topic,
                                                     int32_t index) const {
  auto t = partitions.find(topic);
  if (t == partitions.end()) return nullptr;
  auto p = t->second.find(index);
  return p == t->second.end() ? nullptr : &p->second;
}

MetadataView::MetadataView(Coordination& coordination, Layout layout)
    : coordination_(coordination),
      layout_(std::move(layout)),
      snapshot_(std::make_shared<ClusterSnapshot>()) {}

MetadataView::~MetadataView() { stop(); }

Status MetadataView::start() {
  std::lock_guard lk(watch_mu_);
  stopped_ = false;
  return load_and_watch();
}

void MetadataView::stop() {
  std::unique_ptr<Watch> w;
  {
    std::lock_guard lk(watch_mu_);
    stopped_ = true;
    w = std::move(watch_);
  }
  if (w) w->cancel();
  std::lock_guard guard(rewatch_mu_);
  if (rewatch_.joinable()) rewatch_.join();
}

// Called with watch_mu_ held.
Status MetadataView::load_and_watch() {
  const std::string& p = layout_.prefix();
  const std::string from = p + "/";
  auto all = coordination_.range(from, prefix_end(from));
  if (!all.ok()) return all.status();
  auto s = std::make_shared<ClusterSnapshot>();
  s->revision = all->revision;
  for (const auto& kv : all->kvs) apply(*s, kv, false);
  publish(s);
  auto w = coordination_.watch(from, prefix_end(from), all->revision + 1,
                               [this](const WatchBatch& b) { on_batch(b); });
  if (!w.ok()) return w.status();
  watch_ = std::move(*w);
  return Status::Ok();
}

void MetadataView::on_batch(const WatchBatch& batch) {
  if (batch.compact_revision > 0) {
    // The history this watch needed is gone: re-read and watch again, off this (ending) thread.
    spdlog::warn("cluster view: etcd history compacted at revision {}; re-reading",
                 batch.compact_revision);
    std::lock_guard guard(rewatch_mu_);
    if (rewatch_.joinable()) rewatch_.join();  // the previous re-read finished long ago
    rewatch_ = std::thread([this] {
      for (int attempt = 0;; ++attempt) {
        {
          std::lock_guard lk(watch_mu_);
          if (stopped_) return;
          std::unique_ptr<Watch> old = std::move(watch_);
          if (old) old->cancel();
          Status st = load_and_watch();
          if (st.ok()) return;
          spdlog::warn("cluster view: re-read failed ({}); retrying", st.to_string());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(attempt, 4)));
      }
    });
    return;
  }
  auto next = std::make_shared<ClusterSnapshot>(*snapshot());
  for (const auto& e : batch.events) apply(*next, e.kv, e.type == WatchEvent::Type::del);
  next->revision = std::max(next->revision, batch.revision);
  publish(next);
}

void MetadataView::apply(ClusterSnapshot& s, const KeyValue& kv, bool deleted) const {
  const std::string& key = kv.key;
  auto bad = [&](const Status& st) {
    spdlog::error("cluster view: ignoring {}: {}", key, st.to_string());
  };
  if (auto id = layout_.broker_id_of(key)) {
    if (deleted) {
      s.brokers.erase(*id);
    } else if (auto r = decode_broker(kv.value); r.ok()) {
      s.brokers[*id] = *r;
    } else {
      bad(r.status());
    }
  } else if (key == layout_.controller()) {
    if (deleted) {
      s.controller.reset();
      s.controller_mod_revision = 0;
    } else if (auto r = decode_controller(kv.value); r.ok()) {
      s.controller = *r;
      s.controller_mod_revision = kv.mod_revision;
    } else {
      bad(r.status());
    }
  } else if (auto topic = layout_.topic_of(key)) {
    if (deleted) {
      s.topics.erase(*topic);
      s.topic_mod_revisions.erase(*topic);
    } else if (auto r = decode_topic(kv.value); r.ok()) {
      s.topics[*topic] = *r;
      s.topic_mod_revisions[*topic] = kv.mod_revision;
    } else {
      bad(r.status());
    }
  } else if (auto tp = layout_.partition_of(key)) {
    if (deleted) {
      auto t = s.partitions.find(tp->first);
      if (t != s.partitions.end()) {
        t->second.erase(tp->second);
        if (t->second.empty()) s.partitions.erase(t);
      }
    } else if (auto r = decode_partition(kv.value); r.ok()) {
      s.partitions[tp->first][tp->second] = VersionedPartition{*r, kv.mod_revision};
    } else {
      bad(r.status());
    }
  }
  s.revision = std::max(s.revision, kv.mod_revision);
}

void MetadataView::publish(std::shared_ptr<const ClusterSnapshot> s) {
  std::vector<Listener> listeners;
  {
    std::lock_guard lk(mu_);
    snapshot_ = s;
    listeners = listeners_;
  }
  cv_.notify_all();
  for (const auto& l : listeners) l(s);
}

std::shared_ptr<const ClusterSnapshot> MetadataView::snapshot() const {
  std::lock_guard lk(mu_);
  return snapshot_;
}

void MetadataView::subscribe(Listener listener) {
  std::lock_guard lk(mu_);
  listeners_.push_back(std::move(listener));
}

bool MetadataView::wait_for_revision(int64_t revision, std::chrono::milliseconds timeout) const {
  std::unique_lock lk(mu_);
  return cv_.wait_for(lk, timeout, [&] { return snapshot_->revision >= revision; });
}

}  // namespace strata::broker::cluster
