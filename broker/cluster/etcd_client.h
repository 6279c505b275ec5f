// EtcdClient: Coordination on a real etcd v3 cluster through its JSON gateway (HTTP/1.1 on the
// client port, Boost.Beast). The gateway rather than gRPC: Debian's etcd serves it on the same
// port, it needs no generated stubs or libgrpc++ in the broker, and the control plane's few
// requests per second do not need gRPC's multiplexing (docs/cluster.md).
//
// Unary calls open one connection each (loopback/LAN, a handful per second) and go to the member
// that answered last; a member that refuses the connection or answers UNAVAILABLE (no leader,
// leader changed) is skipped for the next one. A request that was sent but got no answer before
// the timeout is not retried — it may have been applied — and returns io_error ("outcome
// unknown"), so a caller of a compare-and-swap re-reads before retrying. Watches stream on their
// own thread and connection, and resume on the next member from the last revision + 1.
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "broker/cluster/coordination.h"

namespace strata::broker::cluster {

struct EtcdEndpoint {
  std::string host;
  std::string port;
};

// "http://host:port" or "host:port"; https is not supported yet (invalid_argument).
Result<EtcdEndpoint> parse_etcd_endpoint(const std::string& text);

struct EtcdOptions {
  std::vector<EtcdEndpoint> endpoints;
  int connect_timeout_ms = 1000;
  int request_timeout_ms = 5000;
  int watch_retry_max_ms = 2000;  // reconnect backoff cap of a watch
};

class EtcdClient : public Coordination {
 public:
  explicit EtcdClient(EtcdOptions options);

  Result<RangeResult> range(const std::string& key, const std::string& range_end = {}) override;
  Result<int64_t> put(const std::string& key, const std::string& value, int64_t lease = 0) override;
  Result<int64_t> delete_range(const std::string& key, const std::string& range_end = {}) override;
  Result<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) override;
  Result<int64_t> grant_lease(int64_t ttl_seconds) override;
  Status keep_alive(int64_t lease) override;
  Status revoke_lease(int64_t lease) override;
  Result<std::unique_ptr<Watch>> watch(const std::string& key, const std::string& range_end,
                                       int64_t start_revision, WatchFn fn) override;

  // Compacts the store's history up to `revision` (tests and operators; the broker never does).
  Status compact(int64_t revision);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace strata::broker::cluster
