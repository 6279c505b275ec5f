// Coordination: the subset of etcd v3 a Strata cluster is built on — a revisioned key-value store
// with compare-and-swap transactions, leases for liveness and watches that resume from a revision.
// The broker's implementation is EtcdClient (broker/cluster/etcd_client.h, a real etcd); unit tests
// use an in-memory fake with the same contract (test/unit/cluster/), and one contract test runs
// against both. Keys and values are bytes. Every call is blocking and thread-safe; watch callbacks
// run on a thread owned by the Watch and never concurrently for one Watch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::broker::cluster {

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;  // 1 on create, +1 per put; 0 = absent
  int64_t lease = 0;    // 0 = not lease-bound
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // sorted by key
  int64_t revision = 0;       // the store's revision when the range was read
};

// One condition of a transaction, compared with the key's current state (an absent key has
// version, create and mod revision 0, so `mod_revision == 0` means "does not exist").
struct Compare {
  enum class Target { version, create_revision, mod_revision, value, lease };
  enum class Op { equal, not_equal, greater, less };
  std::string key;
  Target target = Target::mod_revision;
  Op op = Op::equal;
  int64_t number = 0;  // version, revisions or lease id
  std::string value;   // Target::value

  static Compare mod_revision_is(std::string key, int64_t rev) {
    return Compare{std::move(key), Target::mod_revision, Op::equal, rev, {}};
  }
  static Compare absent(std::string key) { return mod_revision_is(std::move(key), 0); }
};

struct TxnOp {
  enum class Kind { put, delete_range, range };
  Kind kind = Kind::put;
  std::string key;
  std::string value;      // put
  int64_t lease = 0;      // put
  std::string range_end;  // delete_range / range: empty = the key alone

  static TxnOp put(std::string key, std::string value, int64_t lease = 0) {
    return TxnOp{Kind::put, std::move(key), std::move(value), lease, {}};
  }
  static TxnOp del(std::string key) { return TxnOp{Kind::delete_range, std::move(key), {}, 0, {}}; }
  static TxnOp get(std::string key, std::string range_end = {}) {
    return TxnOp{Kind::range, std::move(key), {}, 0, std::move(range_end)};
  }
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;
  std::vector<RangeResult> ranges;  // one per TxnOp::Kind::range of the branch that ran, in order
};

struct WatchEvent {
  enum class Type { put, del };
  Type type = Type::put;
  KeyValue kv;  // for del: key and mod_revision (the deletion's revision)
};

// What a watch delivers: events in revision order, or the end of the watch because the history it
// needed was compacted away — then the caller re-reads (range) and watches again from the range's
// revision + 1.
struct WatchBatch {
  std::vector<WatchEvent> events;
  int64_t revision = 0;          // the store's revision when this batch was sent
  int64_t compact_revision = 0;  // > 0: the watch ended, history before this is gone
};

class Watch {
 public:
  virtual ~Watch() = default;
  // Stops delivery; no callback runs after cancel() returns (safe to call twice).
  virtual void cancel() = 0;
};

// The smallest key greater than every key starting with `prefix` (etcd's range_end for a prefix).
std::string prefix_end(const std::string& prefix);

class Coordination {
 public:
  using WatchFn = std::function<void(const WatchBatch&)>;
  virtual ~Coordination() = default;

  // Keys in [key, range_end); range_end empty = the key alone.
  virtual Result<RangeResult> range(const std::string& key, const std::string& range_end = {}) = 0;
  // Returns the revision of the put. A put bound to an unknown or expired lease fails (not_found).
  virtual Result<int64_t> put(const std::string& key, const std::string& value,
                              int64_t lease = 0) = 0;
  // Returns the number of keys deleted.
  virtual Result<int64_t> delete_range(const std::string& key,
                                       const std::string& range_end = {}) = 0;
  // Atomically: if every compare holds, run `success`, else `failure`.
  virtual Result<TxnResult> txn(const std::vector<Compare>& compares,
                                const std::vector<TxnOp>& success,
                                const std::vector<TxnOp>& failure) = 0;

  // Leases: a granted lease lives `ttl_seconds` after its last keep-alive; when it expires (or is
  // revoked) every key bound to it is deleted.
  virtual Result<int64_t> grant_lease(int64_t ttl_seconds) = 0;
  // One keep-alive; not_found once the lease has expired or was revoked.
  virtual Status keep_alive(int64_t lease) = 0;
  virtual Status revoke_lease(int64_t lease) = 0;

  // Events on [key, range_end) from `start_revision` (0 = from now). The Watch resumes by itself
  // after a connection loss (from the last delivered revision + 1); only compaction ends it.
  virtual Result<std::unique_ptr<Watch>> watch(const std::string& key, const std::string& range_end,
                                               int64_t start_revision, WatchFn fn) = 0;
};

}  // namespace strata::broker::cluster
