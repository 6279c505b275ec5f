// TxnOffsetForwarder: the group side of transactional offsets in a cluster. A client sends
// TxnOffsetCommit to its group's coordinator, but the offsets belong to the transaction, whose
// coordinator (the leader of the transactional id's __transaction_state partition) is usually
// another broker: it keeps them durably with the transaction's state and hands them to the group's
// coordinator when the transaction ends (EndTxnOffsets). This class forwards the request there —
// on its own thread, over the inter-broker listener, answering the client with the coordinator's
// answer — and remembers which partitions of a group have offsets pending in a transaction, so
// that OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT until EndTxnOffsets arrives
// (in memory: a group coordinator that restarts forgets them; the commit itself is not lost).
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "protocol/client/connection.h"
#include "protocol/messages/txn_offset_commit.h"

namespace strata::broker {
namespace cluster {
class ClusterNode;
}
namespace txn {

class TxnCoordinator;

// The client id of forwarded requests: a broker that receives one but does not coordinate the
// transactional id answers NOT_COORDINATOR instead of forwarding it again.
inline constexpr const char* kForwardClientId = "strata-txn-offsets-forward";

class TxnOffsetForwarder {
 public:
  using Done = std::function<void(Result<protocol::TxnOffsetCommitResponse>)>;
  // Requests waiting to be forwarded at most (a bound on what clients can make the broker hold);
  // beyond it a request is answered COORDINATOR_NOT_AVAILABLE at once.
  static constexpr size_t kMaxQueued = 1024;
  TxnOffsetForwarder(cluster::ClusterNode& cluster, TxnCoordinator& txns,
                     client::ClientSecurity security);
  ~TxnOffsetForwarder();

  // Sends `req` (at most `version`) to the transactional id's coordinator; `done` runs on the
  // forwarder's thread with its answer, or an error when none could be had (no leader, broker
  // unreachable). Partitions answered without error are remembered as pending.
  void forward(protocol::TxnOffsetCommitRequest req, int16_t version, Done done);
  // The transaction of `producer_id` ended: its pending offsets of `group` are no longer pending.
  void clear(const std::string& group, int64_t producer_id);
  bool pending(const std::string& group, const std::string& topic, int32_t partition);
  void stop();

 private:
  struct Job {
    protocol::TxnOffsetCommitRequest req;
    int16_t version;
    Done done;
  };
  void run();
  Result<protocol::TxnOffsetCommitResponse> send(const Job& job);

  cluster::ClusterNode& cluster_;
  TxnCoordinator& txns_;
  const client::ClientSecurity security_;
  std::map<int32_t, std::unique_ptr<client::Connection>> connections_;  // the thread's only

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  // group -> producer id -> partitions with an offset pending in its transaction
  std::map<std::string, std::map<int64_t, std::set<std::pair<std::string, int32_t>>>> pending_;
  std::thread thread_;
};

}  // namespace txn
}  // namespace strata::broker
