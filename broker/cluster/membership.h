// Membership: this broker's registration in etcd — `{prefix}/brokers/{id}` bound to a lease that a
// thread keeps alive every TTL/3. The key's existence is what "alive" means to the controller.
// - join() fails (already_exists) while another live broker holds the same node.id, after
//   waiting one lease TTL (+2 s) for it to go (a restart right after a crash finds its own
//   previous registration still alive).
// - When the lease is lost anyway (etcd unreachable past the TTL, a long pause), the broker has
//   been dropped from every ISR and lost its leaderships: on_lost() is called, and the thread
//   registers again with a fresh lease as soon as etcd answers (the broker rejoins as a follower)
//   — unless etcd then keeps the old lease alive (it was unreachable, e.g. restarting, and renewed
//   its leases): the registration stands and nothing was taken from this broker.
// - begin_shutdown() marks the record shutting_down, so the controller moves leadership away;
//   leave() revokes the lease, so the broker's key disappears at once rather than after the TTL.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "broker/cluster/coordination.h"
#include "broker/cluster/records.h"

namespace strata::broker::cluster {

class Membership {
 public:
  struct Options {
    int64_t lease_ttl_seconds = 6;
    std::function<void()> on_lost;  // called on the keep-alive thread
    // After on_lost: the broker is registered again (its old lease lived, or a new one), on the
    // keep-alive thread.
    std::function<void()> on_regained;
  };
  Membership(Coordination& coordination, Layout layout, BrokerRecord self, Options options);
  ~Membership();

  Status join();
  Status begin_shutdown();
  void leave();

  int64_t lease() const { return lease_.load(); }
  const BrokerRecord& self() const { return self_; }

 private:
  Status register_once();
  void keep_alive_loop();

  Coordination& coordination_;
  const Layout layout_;
  BrokerRecord self_;
  const Options options_;
  std::atomic<int64_t> lease_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace strata::broker::cluster
