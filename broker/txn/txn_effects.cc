#include "broker/txn/txn_effects.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "broker/cluster/cluster_node.h"
#include "broker/failpoint.h"
#include "broker/group/group_coordinator.h"
#include "broker/pk/pk_tables.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "broker/txn/producer_ids.h"
#include "protocol/ext/api_keys.h"
#include "protocol/ext/txn_offsets.pb.h"
#include "protocol/messages/write_txn_markers.h"
#include "protocol/wire/errors.h"

namespace strata::broker::txn {

BrokerTxnEffects::~BrokerTxnEffects() = default;

bool BrokerTxnEffects::write_marker(const TopicPartition& tp, int64_t producer_id, int16_t epoch,
                                    bool commit, int32_t coordinator_epoch) {
  if (cluster_) return write_remote_markers({tp}, producer_id, epoch, commit, coordinator_epoch)[0];
  auto topic = topics_.find(tp.first);
  storage::PartitionLog* log = topic ? topic->partition(tp.second) : nullptr;
  if (!log) {
    // Deleted since it joined the transaction: nothing is left to end there.
    spdlog::warn("{} marker of producer {} for {}-{}: the partition no longer exists",
                 commit ? "COMMIT" : "ABORT", producer_id, tp.first, tp.second);
    return true;
  }
  failpoint("txn.write_marker");
  auto r = pk_tables_.append_marker(*topic, tp.second, *log, producer_id, epoch, coordinator_epoch,
                                    commit, now_ms());
  if (!r.ok()) {
    spdlog::error("{} marker of producer {} for {}-{} failed: {}", commit ? "COMMIT" : "ABORT",
                  producer_id, tp.first, tp.second, r.status().to_string());
    return r.status().code() == Errc::not_found;
  }
  if (r->producer_check == storage::ProducerCheck::stale_epoch ||
      r->producer_check == storage::ProducerCheck::fenced_coordinator) {
    // A newer epoch (or coordinator) already wrote there: nothing to end.
    spdlog::warn("{} marker of producer {} epoch {} for {}-{} refused: {}",
                 commit ? "COMMIT" : "ABORT", producer_id, epoch, tp.first, tp.second,
                 r->producer_message);
  }
  return true;
}

std::vector<bool> BrokerTxnEffects::write_markers(const std::vector<TopicPartition>& tps,
                                                  int64_t producer_id, int16_t epoch, bool commit,
                                                  int32_t coordinator_epoch) {
  if (!cluster_) {
    return TxnEffects::write_markers(tps, producer_id, epoch, commit, coordinator_epoch);
  }
  return write_remote_markers(tps, producer_id, epoch, commit, coordinator_epoch);
}

std::vector<bool> BrokerTxnEffects::write_remote_markers(const std::vector<TopicPartition>& tps,
                                                         int64_t producer_id, int16_t epoch,
                                                         bool commit, int32_t coordinator_epoch) {
  const char* kind = commit ? "COMMIT" : "ABORT";
  std::vector<bool> out(tps.size(), false);
  auto s = cluster_->snapshot();
  // One request per leader, answered once all its partitions replicated the marker.
  std::map<int32_t, std::vector<size_t>> by_leader;
  for (size_t i = 0; i < tps.size(); ++i) {
    const auto* part = s->partition(tps[i].first, tps[i].second);
    if (!part) {
      spdlog::warn("{} marker of producer {} for {}-{}: the partition no longer exists", kind,
                   producer_id, tps[i].first, tps[i].second);
      out[i] = true;
    } else if (part->state.leader < 0 || !s->brokers.count(part->state.leader)) {
      spdlog::warn("{} marker of producer {} for {}-{}: no live leader yet; retried", kind,
                   producer_id, tps[i].first, tps[i].second);
    } else {
      by_leader[part->state.leader].push_back(i);
    }
  }
  if (by_leader.empty()) return out;
  failpoint("txn.write_marker");
  std::lock_guard l(conn_mu_);
  for (const auto& [leader, idx] : by_leader) {
    protocol::WriteTxnMarkersRequest req;
    auto& m = req.markers.emplace_back();
    m.producer_id = producer_id;
    m.producer_epoch = epoch;
    m.transaction_result = commit;
    m.coordinator_epoch = coordinator_epoch;
    for (size_t i : idx) {
      if (m.topics.empty() || m.topics.back().name != tps[i].first) {
        m.topics.emplace_back().name = tps[i].first;
      }
      m.topics.back().partition_indexes.push_back(tps[i].second);
    }
    const auto& b = s->brokers.at(leader);
    auto conn = connection(leader, b.host, b.port);
    if (!conn.ok()) {
      spdlog::warn("{} markers of producer {}: broker {} unreachable ({}); retried", kind,
                   producer_id, leader, conn.status().to_string());
      continue;
    }
    auto r =
        (*conn)->call<protocol::WriteTxnMarkersRequest, protocol::WriteTxnMarkersResponse>(req);
    if (!r.ok()) {
      spdlog::warn("{} markers of producer {} to broker {} failed: {}; retried", kind, producer_id,
                   leader, r.status().to_string());
      connections_.erase(leader);
      continue;
    }
    std::map<TopicPartition, protocol::ErrorCode> got;
    for (const auto& mr : r->msg.markers) {
      for (const auto& tr : mr.topics) {
        for (const auto& pr : tr.partitions) got[{tr.name, pr.partition_index}] = pr.error_code;
      }
    }
    for (size_t i : idx) {
      auto it = got.find(tps[i]);
      const auto err = it == got.end() ? protocol::ErrorCode::unknown_server_error : it->second;
      switch (err) {
        case protocol::ErrorCode::none:
          out[i] = true;
          break;
        case protocol::ErrorCode::unknown_topic_or_partition:      // deleted meanwhile
        case protocol::ErrorCode::invalid_producer_epoch:          // a newer epoch wrote there
        case protocol::ErrorCode::transaction_coordinator_fenced:  // a newer coordinator did
          spdlog::warn("{} marker of producer {} epoch {} for {}-{}: {}; nothing more to write",
                       kind, producer_id, epoch, tps[i].first, tps[i].second,
                       protocol::error_name(err));
          out[i] = true;
          break;
        default:
          spdlog::warn("{} marker of producer {} for {}-{} to broker {}: {}; retried", kind,
                       producer_id, tps[i].first, tps[i].second, leader, protocol::error_name(err));
      }
    }
  }
  return out;
}

Result<client::Connection*> BrokerTxnEffects::connection(int32_t broker, const std::string& host,
                                                         int32_t port) {
  auto& conn = connections_[broker];
  if (!conn || conn->broken() || conn->host() != host || conn->port() != port) {
    client::ConnectionOptions co;
    co.client_id = "strata-txn-coordinator";
    co.connect_timeout_ms = 2000;
    co.request_timeout_ms = 15000;  // a marker's leader waits up to 10 s for replication
    co.security = security_;
    auto c = client::Connection::open(host, port, co);
    if (!c.ok()) {
      connections_.erase(broker);
      return c.status();
    }
    conn = std::move(*c);
  }
  return conn.get();
}

int32_t BrokerTxnEffects::group_coordinator(const std::string& group) {
  auto s = cluster_->snapshot();
  const auto* part = s->partition(kConsumerOffsetsTopic, groups_.partition_for(group));
  return part ? part->state.leader : -1;
}

bool BrokerTxnEffects::end_remote_offsets(const std::string& group, int64_t producer_id,
                                          bool commit, const std::vector<PendingOffset>& offsets) {
  strata::ext::EndTxnOffsetsRequest req;
  req.set_group(group);
  req.set_producer_id(producer_id);
  req.set_commit(commit);
  for (const auto& o : offsets) {
    auto* out = req.add_offsets();
    out->set_topic(o.topic);
    out->set_partition(o.partition);
    out->set_offset(o.offset);
    out->set_leader_epoch(o.leader_epoch);
    out->set_has_metadata(o.metadata.has_value());
    if (o.metadata) out->set_metadata(*o.metadata);
  }
  auto s = cluster_->snapshot();
  const int32_t leader = group_coordinator(group);
  auto b = s->brokers.find(leader);
  if (b == s->brokers.end()) {
    spdlog::warn("group {}: no coordinator for the offsets of producer {}'s transaction yet", group,
                 producer_id);
    return false;
  }
  std::lock_guard l(conn_mu_);
  auto conn = connection(leader, b->second.host, b->second.port);
  strata::ext::EndTxnOffsetsResponse resp;
  Status st =
      conn.ok() ? (*conn)->call_ext(protocol::ext::kEndTxnOffsets, req, resp) : conn.status();
  if (!st.ok()) {
    connections_.erase(leader);
    spdlog::warn("group {}: ending the offsets of producer {}'s transaction at broker {}: {}",
                 group, producer_id, leader, st.to_string());
    return false;
  }
  const auto err = static_cast<protocol::ErrorCode>(resp.error_code());
  if (err != protocol::ErrorCode::none) {
    spdlog::warn("group {}: broker {} answered {} to the offsets of producer {}'s transaction: {}",
                 group, leader, protocol::error_name(err), producer_id, resp.error_message());
  }
  return err == protocol::ErrorCode::none;
}

void BrokerTxnEffects::abort_offsets(const std::string& group, int64_t producer_id) {
  if (!cluster_ || group_coordinator(group) == cluster_->options().node_id) return;
  end_remote_offsets(group, producer_id, false, {});  // best effort: only require_stable waits
}

void BrokerTxnEffects::commit_offsets(const std::string& group, int64_t producer_id,
                                      std::vector<PendingOffset> offsets,
                                      std::function<void()> done) {
  if (cluster_ && group_coordinator(group) != cluster_->options().node_id) {
    // The transaction's coordinator holds the offsets (durable with its state) until the group's
    // coordinator has them; it is asked again while it moves (this runs on the marker worker).
    for (int attempt = 0; attempt < 40; ++attempt) {
      if (end_remote_offsets(group, producer_id, true, offsets)) return done();
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      if (group_coordinator(group) == cluster_->options().node_id) break;  // it moved here
    }
    if (group_coordinator(group) != cluster_->options().node_id) {
      spdlog::error(
          "group {}: the offsets of producer {}'s committed transaction could not be "
          "handed to the group's coordinator",
          group, producer_id);
      return done();
    }
  }
  std::vector<group::CommitPartition> parts;
  for (auto& o : offsets) {
    auto& p = parts.emplace_back();
    p.topic = std::move(o.topic);
    p.partition = o.partition;
    p.offset = o.offset;
    p.leader_epoch = o.leader_epoch;
    p.metadata = std::move(o.metadata);
  }
  groups_.commit_transactional(
      group, std::move(parts),
      [group, done = std::move(done)](std::vector<group::CommitPartition> result) {
        for (const auto& p : result) {
          if (p.error != protocol::ErrorCode::none) {
            spdlog::error("committing the transactional offset of group {} for {}-{} failed: {}",
                          group, p.topic, p.partition, protocol::error_name(p.error));
          }
        }
        done();
      });
}

Result<int64_t> BrokerTxnEffects::new_producer_id() { return producer_ids_.next(); }

size_t abort_orphaned_transactions(TopicRegistry& topics, PkTables& pk_tables,
                                   const std::set<std::pair<int64_t, TopicPartition>>& owned) {
  size_t aborted = 0;
  for (const auto& topic : topics.list()) {
    if (topic->name == kTransactionStateTopic) continue;
    for (size_t p = 0; p < topic->partitions.size(); ++p) {
      storage::PartitionLog* log = topic->partitions[p].get();
      if (!log) continue;
      const TopicPartition tp{topic->name, static_cast<int32_t>(p)};
      for (const auto& st : log->producer_states()) {
        const int64_t pid = st.producer_id;
        const int64_t first_offset = st.txn_first_offset;
        if (first_offset < 0 || owned.count({pid, tp})) continue;
        const int16_t epoch = st.epoch;
        auto m = pk_tables.append_marker(*topic, static_cast<int32_t>(p), *log, pid, epoch, 0,
                                         false, now_ms());
        if (!m.ok()) {
          spdlog::error("{}-{}: aborting the orphaned transaction of producer {} failed: {}",
                        topic->name, p, pid, m.status().to_string());
          continue;
        }
        spdlog::warn(
            "{}-{}: aborted the transaction of producer {} (epoch {}) open since offset {}: no "
            "coordinator state owns it",
            topic->name, p, pid, epoch, first_offset);
        ++aborted;
      }
    }
  }
  return aborted;
}

}  // namespace strata::broker::txn
