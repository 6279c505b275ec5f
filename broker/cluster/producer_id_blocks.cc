#include "broker/cluster/producer_id_blocks.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <random>
#include <thread>

namespace strata::broker::cluster {

Result<int64_t> EtcdProducerIdBlocks::reserve(int64_t size) {
  const std::string key = layout_.producer_id_block();
  // Lost races back off with jitter (growing to ~50 ms), so brokers reserving at the same moment
  // spread out instead of colliding again; a block serves 1000 InitProducerIds, so this is rare.
  std::minstd_rand jitter(
      static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count() ^
                            std::hash<std::thread::id>()(std::this_thread::get_id())));
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (attempt > 0) {
      const int cap_ms = std::min(50, 1 << std::min(attempt, 6));
      std::this_thread::sleep_for(std::chrono::microseconds(jitter() % (cap_ms * 1000 + 1)));
    }
    auto current = coordination_.range(key);
    if (!current.ok()) return current.status();
    int64_t next = 0, rev = 0;
    if (!current->kvs.empty()) {
      auto n = decode_counter(current->kvs[0].value, "next");
      if (!n.ok()) return n.status();
      next = *n;
      rev = current->kvs[0].mod_revision;
    }
    auto r = coordination_.txn({Compare::mod_revision_is(key, rev)},
                               {TxnOp::put(key, encode_counter("next", next + size))}, {});
    if (!r.ok()) return r.status();
    if (r->succeeded) return next;
  }
  return Status(Errc::io_error, "producer id block: too many concurrent reservations");
}

}  // namespace strata::broker::cluster
