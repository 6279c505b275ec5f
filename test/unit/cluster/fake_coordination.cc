#include "test/unit/cluster/fake_coordination.h"

#include <chrono>

namespace strata::broker::cluster {

class FakeCoordination::FakeWatch : public Watch {
 public:
  FakeWatch(FakeCoordination* owner, std::string key, std::string range_end, WatchFn fn)
      : owner_(owner), key(std::move(key)), range_end(std::move(range_end)), fn_(std::move(fn)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~FakeWatch() override { cancel(); }

  void cancel() override {
    if (owner_) {
      std::lock_guard lk(owner_->mu_);
      std::erase(owner_->watches_, this);
      owner_ = nullptr;
    }
    {
      std::lock_guard lk(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

  // Called with the owner's mutex held, so batches queue in revision order.
  void enqueue(WatchBatch b) {
    {
      std::lock_guard lk(mu_);
      queue_.push_back(std::move(b));
    }
    cv_.notify_all();
  }
  void detach_owner() { owner_ = nullptr; }

  const FakeCoordination* owner() const { return owner_; }
  FakeCoordination* owner_;
  const std::string key;
  const std::string range_end;

 private:
  void loop() {
    for (;;) {
      WatchBatch b;
      {
        std::unique_lock lk(mu_);
        cv_.wait(lk, [this] { return stopped_ || !queue_.empty(); });
        if (stopped_) return;
        b = std::move(queue_.front());
        queue_.pop_front();
      }
      fn_(b);
      if (b.compact_revision > 0) return;
    }
  }

  WatchFn fn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WatchBatch> queue_;
  bool stopped_ = false;
  std::thread thread_;
};

FakeCoordination::FakeCoordination(Clock clock) : clock_(std::move(clock)) {}

FakeCoordination::~FakeCoordination() {
  std::lock_guard lk(mu_);
  for (auto* w : watches_) w->detach_owner();
  watches_.clear();
}

int64_t FakeCoordination::now() const {
  if (clock_) return clock_();
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status FakeCoordination::check_reachable() const {
  return unreachable_ ? Status(Errc::io_error, "fake etcd: connect: connection refused")
                      : Status::Ok();
}

void FakeCoordination::set_unreachable(bool unreachable) {
  std::lock_guard lk(mu_);
  unreachable_ = unreachable;
}

int64_t FakeCoordination::revision() const {
  std::lock_guard lk(mu_);
  return revision_;
}

bool FakeCoordination::in_range(const std::string& k, const std::string& key,
                                const std::string& range_end) const {
  if (range_end.empty()) return k == key;
  if (range_end == std::string(1, '\0')) return k >= key;
  return k >= key && k < range_end;
}

RangeResult FakeCoordination::range_locked(const std::string& key,
                                           const std::string& range_end) const {
  RangeResult out;
  out.revision = revision_;
  for (auto it = kvs_.lower_bound(key); it != kvs_.end(); ++it) {
    if (!in_range(it->first, key, range_end)) break;
    out.kvs.push_back(it->second);
  }
  return out;
}

void FakeCoordination::put_locked(const std::string& key, const std::string& value, int64_t lease,
                                  std::vector<Event>& fired) {
  KeyValue& kv = kvs_[key];
  if (kv.version == 0) {
    kv.key = key;
    kv.create_revision = revision_;
  }
  kv.value = value;
  kv.mod_revision = revision_;
  ++kv.version;
  kv.lease = lease;
  fired.push_back({revision_, {WatchEvent::Type::put, kv}});
}

int64_t FakeCoordination::delete_locked(const std::string& key, const std::string& range_end,
                                        std::vector<Event>& fired) {
  int64_t n = 0;
  for (auto it = kvs_.lower_bound(key); it != kvs_.end();) {
    if (!in_range(it->first, key, range_end)) break;
    KeyValue gone;
    gone.key = it->first;
    gone.mod_revision = revision_;
    fired.push_back({revision_, {WatchEvent::Type::del, gone}});
    it = kvs_.erase(it);
    ++n;
  }
  return n;
}

// Each expired lease's keys go in one revision, as etcd revokes them in one transaction.
void FakeCoordination::expire_locked(std::vector<Event>& fired) {
  const int64_t t = now();
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.deadline_ms > t) {
      ++it;
      continue;
    }
    bool any = false;
    for (auto kv = kvs_.begin(); kv != kvs_.end();) {
      if (kv->second.lease != it->first) {
        ++kv;
        continue;
      }
      if (!any) {
        ++revision_;
        any = true;
      }
      KeyValue gone;
      gone.key = kv->first;
      gone.mod_revision = revision_;
      fired.push_back({revision_, {WatchEvent::Type::del, gone}});
      kv = kvs_.erase(kv);
    }
    it = leases_.erase(it);
  }
}

void FakeCoordination::publish(std::vector<Event> fired) {
  for (const auto& e : fired) history_.push_back(e);
  for (auto* w : watches_) {
    WatchBatch b;
    for (const auto& e : fired) {
      if (!in_range(e.event.kv.key, w->key, w->range_end)) continue;
      if (!b.events.empty() && b.events.back().kv.mod_revision != e.revision) {
        b.revision = b.events.back().kv.mod_revision;
        w->enqueue(std::move(b));
        b = WatchBatch{};
      }
      b.events.push_back(e.event);
    }
    if (!b.events.empty()) {
      b.revision = revision_;
      w->enqueue(std::move(b));
    }
  }
}

void FakeCoordination::expire_leases() {
  std::lock_guard lk(mu_);
  std::vector<Event> fired;
  expire_locked(fired);
  publish(std::move(fired));
}

Result<RangeResult> FakeCoordination::range(const std::string& key, const std::string& range_end) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  std::vector<Event> fired;
  expire_locked(fired);
  publish(std::move(fired));
  return range_locked(key, range_end);
}

Result<int64_t> FakeCoordination::put(const std::string& key, const std::string& value,
                                      int64_t lease) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  std::vector<Event> fired;
  expire_locked(fired);
  if (lease != 0 && !leases_.count(lease)) {
    publish(std::move(fired));
    return Status(Errc::not_found, "etcd: etcdserver: requested lease not found");
  }
  ++revision_;
  put_locked(key, value, lease, fired);
  publish(std::move(fired));
  return revision_;
}

Result<int64_t> FakeCoordination::delete_range(const std::string& key,
                                               const std::string& range_end) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  std::vector<Event> fired;
  expire_locked(fired);
  ++revision_;
  const int64_t n = delete_locked(key, range_end, fired);
  if (n == 0) --revision_;  // etcd does not bump the revision for a delete of nothing
  publish(std::move(fired));
  return n;
}

bool FakeCoordination::holds(const Compare& c) const {
  auto it = kvs_.find(c.key);
  if (it == kvs_.end() && c.target == Compare::Target::value) return false;  // as etcd
  const KeyValue kv = it == kvs_.end() ? KeyValue{} : it->second;
  int cmp = 0;
  auto three_way = [](auto a, auto b) { return a < b ? -1 : (a > b ? 1 : 0); };
  switch (c.target) {
    case Compare::Target::version:
      cmp = three_way(kv.version, c.number);
      break;
    case Compare::Target::create_revision:
      cmp = three_way(kv.create_revision, c.number);
      break;
    case Compare::Target::mod_revision:
      cmp = three_way(kv.mod_revision, c.number);
      break;
    case Compare::Target::lease:
      cmp = three_way(kv.lease, c.number);
      break;
    case Compare::Target::value:
      cmp = three_way(kv.value, c.value);
      break;
  }
  switch (c.op) {
    case Compare::Op::equal:
      return cmp == 0;
    case Compare::Op::not_equal:
      return cmp != 0;
    case Compare::Op::greater:
      return cmp > 0;
    case Compare::Op::less:
      return cmp < 0;
  }
  return false;
}

Result<TxnResult> FakeCoordination::txn(const std::vector<Compare>& compares,
                                        const std::vector<TxnOp>& success,
                                        const std::vector<TxnOp>& failure) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  std::vector<Event> fired;
  expire_locked(fired);
  TxnResult out;
  out.succeeded = true;
  for (const auto& c : compares) out.succeeded = out.succeeded && holds(c);
  const auto& ops = out.succeeded ? success : failure;
  for (const auto& op : ops) {
    if (op.kind == TxnOp::Kind::put && op.lease != 0 && !leases_.count(op.lease)) {
      publish(std::move(fired));
      return Status(Errc::not_found, "etcd: etcdserver: requested lease not found");
    }
  }
  // Like etcd, a transaction that changes nothing does not take a revision.
  const size_t fired_before = fired.size();
  ++revision_;
  for (const auto& op : ops) {
    switch (op.kind) {
      case TxnOp::Kind::put:
        put_locked(op.key, op.value, op.lease, fired);
        break;
      case TxnOp::Kind::delete_range:
        delete_locked(op.key, op.range_end, fired);
        break;
      case TxnOp::Kind::range:
        out.ranges.push_back(range_locked(op.key, op.range_end));
        break;
    }
  }
  if (fired.size() == fired_before) --revision_;
  out.revision = revision_;
  publish(std::move(fired));
  return out;
}

Result<int64_t> FakeCoordination::grant_lease(int64_t ttl_seconds) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  const int64_t id = ++next_lease_;
  leases_[id] = Lease{ttl_seconds * 1000, now() + ttl_seconds * 1000};
  return id;
}

Status FakeCoordination::keep_alive(int64_t lease) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  std::vector<Event> fired;
  expire_locked(fired);
  publish(std::move(fired));
  auto it = leases_.find(lease);
  if (it == leases_.end()) {
    return Status(Errc::not_found, "etcd lease " + std::to_string(lease) + " has expired");
  }
  it->second.deadline_ms = now() + it->second.ttl_ms;
  return Status::Ok();
}

Status FakeCoordination::revoke_lease(int64_t lease) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  std::vector<Event> fired;
  expire_locked(fired);
  auto it = leases_.find(lease);
  if (it == leases_.end()) {
    publish(std::move(fired));
    return Status(Errc::not_found, "etcd: etcdserver: requested lease not found");
  }
  it->second.deadline_ms = INT64_MIN;  // expires now, through the one expiry path
  expire_locked(fired);
  publish(std::move(fired));
  return Status::Ok();
}

Status FakeCoordination::compact(int64_t revision) {
  std::lock_guard lk(mu_);
  if (revision <= compacted_) {
    return Status(Errc::out_of_range, "etcd: mvcc: required revision has been compacted");
  }
  if (revision > revision_) {
    return Status(Errc::out_of_range, "etcd: mvcc: required revision is a future revision");
  }
  compacted_ = revision;
  while (!history_.empty() && history_.front().revision < revision) history_.pop_front();
  return Status::Ok();
}

Result<std::unique_ptr<Watch>> FakeCoordination::watch(const std::string& key,
                                                       const std::string& range_end,
                                                       int64_t start_revision, WatchFn fn) {
  std::lock_guard lk(mu_);
  STRATA_RETURN_IF_ERROR(check_reachable());
  auto w = std::make_unique<FakeWatch>(this, key, range_end, std::move(fn));
  if (start_revision > 0 && start_revision < compacted_) {
    WatchBatch b;
    b.revision = revision_;
    b.compact_revision = compacted_;
    w->enqueue(std::move(b));
    w->detach_owner();
    return std::unique_ptr<Watch>(std::move(w));
  }
  if (start_revision > 0) {  // replay history, one batch per revision
    WatchBatch b;
    for (const auto& e : history_) {
      if (e.revision < start_revision || !in_range(e.event.kv.key, key, range_end)) continue;
      if (!b.events.empty() && b.events.back().kv.mod_revision != e.revision) {
        b.revision = revision_;
        w->enqueue(std::move(b));
        b = WatchBatch{};
      }
      b.events.push_back(e.event);
    }
    if (!b.events.empty()) {
      b.revision = revision_;
      w->enqueue(std::move(b));
    }
  }
  watches_.push_back(w.get());
  return std::unique_ptr<Watch>(std::move(w));
}

}  // namespace strata::broker::cluster
