#include "broker/cluster/controller.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "broker/cluster/elections.h"
#include "broker/cluster/reassignment.h"

namespace strata::broker::cluster {

namespace {
// etcd refuses transactions of more than --max-txn-ops (128 by default) operations; a batch of
// partition changes is its compares plus its puts.
constexpr size_t kPartitionsPerTxn = 60;
}  // namespace

Controller::Controller(Coordination& coordination, Layout layout, MetadataView& view,
                       int32_t self_id, Options options)
    : coordination_(coordination),
      layout_(std::move(layout)),
      view_(view),
      self_(self_id),
      options_(std::move(options)) {
  view_.subscribe([this](const std::shared_ptr<const ClusterSnapshot>& s) {
    {
      std::lock_guard lk(mu_);
      pending_ = s;
    }
    cv_.notify_all();
  });
}

Controller::~Controller() { stop(); }

void Controller::start() {
  std::lock_guard lk(mu_);
  stopping_ = false;
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
}

void Controller::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  active_epoch_.store(0);
}

void Controller::loop() {
  for (;;) {
    {
      std::unique_lock lk(mu_);
      // A periodic pass retries what a lost race or an etcd error left undone.
      cv_.wait_for(lk, std::chrono::seconds(1), [this] { return stopping_ || pending_; });
      if (stopping_) return;
      pending_.reset();
    }
    const auto s = view_.snapshot();
    if (!s->controller) {
      active_epoch_.store(0);
      campaign(*s);
      continue;
    }
    const bool mine = s->controller->id == self_ && s->controller_mod_revision != 0 &&
                      s->controller_mod_revision == my_controller_revision_;
    if (!mine) {
      if (active_epoch_.exchange(0) > 0) {
        spdlog::warn("cluster: broker {} is no longer the controller (broker {} is, epoch {})",
                     self_, s->controller->id, s->controller->epoch);
      }
      continue;
    }
    reconcile(*s);
  }
}

void Controller::campaign(const ClusterSnapshot& s) {
  (void)s;
  const int64_t lease = options_.lease ? options_.lease() : 0;
  if (lease == 0) return;  // not registered (yet): cannot hold the controller key
  auto current = coordination_.range(layout_.controller_epoch());
  if (!current.ok()) return;
  int64_t epoch = 0, epoch_rev = 0;
  if (!current->kvs.empty()) {
    auto e = decode_counter(current->kvs[0].value, "epoch");
    if (!e.ok()) {
      spdlog::error("cluster: bad controller epoch record: {}", e.status().to_string());
      return;
    }
    epoch = *e;
    epoch_rev = current->kvs[0].mod_revision;
  }
  const ControllerRecord me{self_, epoch + 1};
  auto r =
      coordination_.txn({Compare::absent(layout_.controller()),
                         Compare::mod_revision_is(layout_.controller_epoch(), epoch_rev)},
                        {TxnOp::put(layout_.controller(), encode(me), lease),
                         TxnOp::put(layout_.controller_epoch(), encode_counter("epoch", me.epoch))},
                        {});
  if (!r.ok() || !r->succeeded) return;  // someone else won; the view will say who
  my_controller_revision_ = r->revision;
  active_epoch_.store(me.epoch);
  spdlog::info("cluster: broker {} is the controller (epoch {})", self_, me.epoch);
  // Act on the state as of our election, not an older snapshot.
  view_.wait_for_revision(r->revision, std::chrono::seconds(5));
  {
    std::lock_guard lk(mu_);
    pending_ = view_.snapshot();
  }
}

std::set<std::pair<std::string, int32_t>> Controller::complete_reassignments(
    const ClusterSnapshot& s) {
  std::set<std::pair<std::string, int32_t>> done;
  for (const auto& [name, topic] : s.topics) {
    auto rev = s.topic_mod_revisions.find(name);
    if (rev == s.topic_mod_revisions.end()) continue;
    // One transaction per topic: its record carries every partition's replica list.
    std::vector<Compare> compares = {
        Compare::mod_revision_is(layout_.controller(), my_controller_revision_),
        Compare::mod_revision_is(layout_.topic(name), rev->second)};
    std::vector<TxnOp> puts;
    TopicRecord record = topic;
    std::vector<int32_t> partitions;
    for (size_t p = 0; p < topic.replicas.size() && puts.size() < kPartitionsPerTxn; ++p) {
      const auto index = static_cast<int32_t>(p);
      const VersionedPartition* vp = s.partition(name, index);
      if (!vp || !reassigning(vp->state)) continue;
      auto next = complete_reassignment({topic.replicas[p], vp->state}, s.brokers);
      if (!next) continue;
      const std::string key = layout_.partition(name, index);
      compares.push_back(Compare::mod_revision_is(key, vp->mod_revision));
      puts.push_back(TxnOp::put(key, encode(next->state)));
      record.replicas[p] = next->replicas;
      partitions.push_back(index);
      done.insert({name, index});
      spdlog::info("cluster: {}-{} reassignment complete: replicas [{}], leader {} (epoch {})",
                   name, p, fmt::join(next->replicas, ","), next->state.leader,
                   next->state.leader_epoch);
    }
    if (puts.empty()) continue;
    puts.push_back(TxnOp::put(layout_.topic(name), encode(record)));
    auto r = coordination_.txn(compares, puts, {});
    if (r.ok() && r->succeeded) {
      partition_changes_ += partitions.size();
      reassignments_completed_ += partitions.size();
    } else {
      ++lost_races_;  // the next view (or the periodic pass) tries again
    }
  }
  return done;
}

void Controller::reconcile(const ClusterSnapshot& s) {
  struct Change {
    std::string key;
    int64_t mod_revision;
    PartitionState next;
  };
  std::vector<Change> changes;
  const std::set<std::pair<std::string, int32_t>> completed = complete_reassignments(s);
  for (const auto& [name, topic] : s.topics) {
    for (size_t p = 0; p < topic.replicas.size(); ++p) {
      const VersionedPartition* vp = s.partition(name, static_cast<int32_t>(p));
      if (!vp) continue;  // topic being created or deleted
      // Written (or tried) just now: the next view has its new state.
      if (completed.count({name, static_cast<int32_t>(p)})) continue;
      auto next =
          reelect(topic.replicas[p], vp->state, s.brokers, options_.unclean_leader_election);
      if (!next) continue;
      if (next->leader != vp->state.leader) {
        spdlog::info("cluster: {}-{} leader {} -> {} (epoch {}), isr {}", name, p, vp->state.leader,
                     next->leader, next->leader_epoch, next->isr.size());
      }
      changes.push_back(
          {layout_.partition(name, static_cast<int32_t>(p)), vp->mod_revision, std::move(*next)});
    }
  }
  auto write = [&](size_t from, size_t to) {
    std::vector<Compare> compares = {
        Compare::mod_revision_is(layout_.controller(), my_controller_revision_)};
    std::vector<TxnOp> puts;
    for (size_t i = from; i < to; ++i) {
      compares.push_back(Compare::mod_revision_is(changes[i].key, changes[i].mod_revision));
      puts.push_back(TxnOp::put(changes[i].key, encode(changes[i].next)));
    }
    auto r = coordination_.txn(compares, puts, {});
    return r.ok() && r->succeeded;
  };
  for (size_t from = 0; from < changes.size(); from += kPartitionsPerTxn) {
    const size_t to = std::min(changes.size(), from + kPartitionsPerTxn);
    if (write(from, to)) {
      partition_changes_ += to - from;
      continue;
    }
    // One partition moved under us (a leader changed its ISR): the rest go one by one.
    for (size_t i = from; i < to; ++i) {
      if (write(i, i + 1)) {
        ++partition_changes_;
      } else {
        ++lost_races_;
      }
    }
  }
}

}  // namespace strata::broker::cluster
