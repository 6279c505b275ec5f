#include "broker/cluster/producer_id_blocks.h"

namespace strata::broker::cluster {

Result<int64_t> EtcdProducerIdBlocks::reserve(int64_t size) {
  const std::string key = layout_.producer_id_block();
  for (int attempt = 0; attempt < 20; ++attempt) {
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
