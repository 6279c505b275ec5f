#include "broker/cluster/membership.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace strata::broker::cluster {

Membership::Membership(Coordination& coordination, Layout layout, BrokerRecord self,
                       Options options)
    : coordination_(coordination),
      layout_(std::move(layout)),
      self_(std::move(self)),
      options_(std::move(options)) {}

Membership::~Membership() { leave(); }

// Puts the broker's record under a new lease, if no live broker holds this id.
Status Membership::register_once() {
  auto lease = coordination_.grant_lease(options_.lease_ttl_seconds);
  if (!lease.ok()) return lease.status();
  const std::string key = layout_.broker(self_.id);
  auto r = coordination_.txn({Compare::absent(key)}, {TxnOp::put(key, encode(self_), *lease)},
                             {TxnOp::get(key)});
  if (!r.ok()) {
    (void)coordination_.revoke_lease(*lease);
    return r.status();
  }
  if (!r->succeeded) {
    (void)coordination_.revoke_lease(*lease);
    std::string holder;
    if (!r->ranges.empty() && !r->ranges[0].kvs.empty()) holder = r->ranges[0].kvs[0].value;
    return Status(Errc::already_exists, "node.id " + std::to_string(self_.id) +
                                            " is registered by a live broker: " + holder);
  }
  lease_.store(*lease);
  return Status::Ok();
}

Status Membership::join() {
  // A broker restarted right after a crash finds its previous registration alive until that
  // lease expires: it waits that long (one TTL and a margin) before giving up, so a supervisor's
  // immediate restart works, while a second live broker with the same node.id is still refused.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::seconds(options_.lease_ttl_seconds) + std::chrono::seconds(2);
  Status st = register_once();
  bool told = false;
  while (st.code() == Errc::already_exists && std::chrono::steady_clock::now() < deadline) {
    if (!told) {
      spdlog::info("cluster: {}; waiting for its lease to expire", st.message());
      told = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    st = register_once();
  }
  STRATA_RETURN_IF_ERROR(st);
  std::lock_guard lk(mu_);
  stopping_ = false;
  if (!thread_.joinable()) thread_ = std::thread([this] { keep_alive_loop(); });
  return Status::Ok();
}

void Membership::keep_alive_loop() {
  using namespace std::chrono;
  const auto interval = milliseconds(options_.lease_ttl_seconds * 1000 / 3);
  auto last_ok = steady_clock::now();
  bool lost = false;
  for (;;) {
    {
      std::unique_lock lk(mu_);
      if (cv_.wait_for(lk, lost ? milliseconds(200) : interval, [this] { return stopping_; })) {
        return;
      }
    }
    if (lost) {
      // Unreachable past the TTL does not prove the lease expired: a restarted etcd renews its
      // leases, and then the key is still ours and the controller changed nothing. Registering
      // anew would wait for that key to expire, and its expiry would move every leadership.
      if (coordination_.keep_alive(lease_.load()).ok()) {
        spdlog::info("cluster: broker {} kept its lease {}: etcd was unreachable, the lease lived",
                     self_.id, lease_.load());
        lost = false;
        last_ok = steady_clock::now();
        if (options_.on_regained) options_.on_regained();
        continue;
      }
      // The old lease is gone: register again as soon as etcd lets us.
      Status st = register_once();
      if (st.ok()) {
        spdlog::info("cluster: broker {} registered again (lease {})", self_.id, lease_.load());
        lost = false;
        last_ok = steady_clock::now();
        if (options_.on_regained) options_.on_regained();
      }
      continue;
    }
    Status st = coordination_.keep_alive(lease_.load());
    if (st.ok()) {
      last_ok = steady_clock::now();
      continue;
    }
    const bool expired = st.code() == Errc::not_found ||
                         steady_clock::now() - last_ok > seconds(options_.lease_ttl_seconds);
    if (!expired) {
      spdlog::warn("cluster: lease keep-alive failed ({}); retrying", st.to_string());
      continue;
    }
    spdlog::error(
        "cluster: broker {} lost its etcd lease ({}): the controller may move its leaderships",
        self_.id, st.to_string());
    lost = true;
    if (options_.on_lost) options_.on_lost();
  }
}

Status Membership::begin_shutdown() {
  self_.shutting_down = true;
  const int64_t lease = lease_.load();
  if (lease == 0) return Status(Errc::not_found, "not registered");
  auto r = coordination_.put(layout_.broker(self_.id), encode(self_), lease);
  return r.ok() ? Status::Ok() : r.status();
}

void Membership::leave() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  const int64_t lease = lease_.exchange(0);
  if (lease != 0) {
    Status st = coordination_.revoke_lease(lease);
    if (!st.ok() && st.code() != Errc::not_found) {
      spdlog::warn("cluster: revoking lease {} failed ({}); the key expires with it", lease,
                   st.to_string());
    }
  }
}

}  // namespace strata::broker::cluster
