#include "broker/txn/txn_forwarder.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/topics/topic_registry.h"
#include "broker/txn/txn_coordinator.h"

namespace strata::broker::txn {

TxnOffsetForwarder::TxnOffsetForwarder(cluster::ClusterNode& cluster, TxnCoordinator& txns,
                                       client::ClientSecurity security)
    : cluster_(cluster), txns_(txns), security_(std::move(security)) {
  thread_ = std::thread([this] { run(); });
}

TxnOffsetForwarder::~TxnOffsetForwarder() { stop(); }

void TxnOffsetForwarder::stop() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TxnOffsetForwarder::forward(protocol::TxnOffsetCommitRequest req, int16_t version, Done done) {
  {
    std::lock_guard l(mu_);
    if (!stopping_ && jobs_.size() < kMaxQueued) {
      jobs_.push_back({std::move(req), version, std::move(done)});
      cv_.notify_one();
      return;
    }
  }
  // Stopping, or too many waiting: answered at once (the client retries) rather than queued.
  done(Status(Errc::unavailable, "the transaction offsets forwarder is busy or stopping"));
}

void TxnOffsetForwarder::run() {
  std::unique_lock l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) break;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    l.unlock();
    auto r = send(job);
    if (r.ok()) {
      std::lock_guard pl(mu_);
      for (const auto& t : r->topics) {
        for (const auto& p : t.partitions) {
          if (p.error_code != protocol::ErrorCode::none) continue;
          pending_[job.req.group_id][job.req.producer_id].emplace(t.name, p.partition_index);
        }
      }
    }
    job.done(std::move(r));
    l.lock();
  }
  // Still queued at stop: answered, nothing forwarded.
  auto left = std::move(jobs_);
  l.unlock();
  for (auto& j : left) j.done(Status(Errc::shutting_down, "the broker is stopping"));
}

Result<protocol::TxnOffsetCommitResponse> TxnOffsetForwarder::send(const Job& job) {
  auto s = cluster_.snapshot();
  const auto* part =
      s->partition(kTransactionStateTopic, txns_.partition_for(job.req.transactional_id));
  auto b = part ? s->brokers.find(part->state.leader) : s->brokers.end();
  if (!part || b == s->brokers.end()) {
    return Status(Errc::unavailable, "the transaction's coordinator is not known");
  }
  auto& conn = connections_[b->first];
  if (!conn || conn->broken() || conn->host() != b->second.host || conn->port() != b->second.port) {
    client::ConnectionOptions co;
    co.client_id = kForwardClientId;
    co.connect_timeout_ms = 2000;
    co.request_timeout_ms = 10000;
    co.security = security_;
    auto c = client::Connection::open(b->second.host, b->second.port, co);
    if (!c.ok()) {
      conn.reset();
      return c.status();
    }
    conn = std::move(*c);
  }
  auto r = conn->call<protocol::TxnOffsetCommitRequest, protocol::TxnOffsetCommitResponse>(
      job.req, job.version);
  if (!r.ok()) {
    conn.reset();
    return r.status();
  }
  return std::move(r->msg);
}

void TxnOffsetForwarder::clear(const std::string& group, int64_t producer_id) {
  std::lock_guard l(mu_);
  auto g = pending_.find(group);
  if (g == pending_.end()) return;
  g->second.erase(producer_id);
  if (g->second.empty()) pending_.erase(g);
}

bool TxnOffsetForwarder::pending(const std::string& group, const std::string& topic,
                                 int32_t partition) {
  std::lock_guard l(mu_);
  auto g = pending_.find(group);
  if (g == pending_.end()) return false;
  for (const auto& [pid, tps] : g->second) {
    if (tps.count({topic, partition})) return true;
  }
  return false;
}

}  // namespace strata::broker::txn
