// Client: transaction administration (see client.h) — ListTransactions on every broker,
// DescribeTransactions at the transactional id's coordinator, DescribeProducers and
// WriteTxnMarkers at partition leaders (Kafka's Admin.listTransactions / describeTransactions /
// describeProducers / abortTransaction).
#include <algorithm>
#include <map>

#include "protocol/messages/describe_producers.h"
#include "protocol/messages/describe_transactions.h"
#include "protocol/messages/list_transactions.h"
#include "protocol/messages/write_txn_markers.h"
#include "tools/client/client.h"

namespace strata::client {
namespace {

std::string txn_ctx(const std::string& id) { return "transactional id '" + id + "'"; }
std::string tp_ctx(const std::string& t, int32_t p) {
  return "topic '" + t + "' partition " + std::to_string(p);
}
constexpr int8_t kTransactionKey = 1;  // FindCoordinator key_type

}  // namespace

Result<Connection*> Client::txn_coordinator_connection(const std::string& txn_id) {
  return find_coordinator(txn_id, kTransactionKey, txn_ctx(txn_id), nullptr);
}

Result<std::vector<TxnListing>> Client::list_transactions(const std::vector<std::string>& states,
                                                          const std::vector<int64_t>& producer_ids,
                                                          int64_t min_duration_ms) {
  auto md = metadata(std::vector<std::string>{});
  if (!md.ok()) return md.status();
  std::vector<TxnListing> out;
  for (const auto& b : md->brokers) {
    auto conn = broker_connection(b.node_id);
    if (!conn.ok()) return conn.status();
    protocol::ListTransactionsRequest req;
    req.state_filters = states;
    req.producer_id_filters = producer_ids;
    req.duration_filter = min_duration_ms;
    // v0 has no duration filter: a bound must not be dropped silently.
    auto reply =
        (*conn)->call<protocol::ListTransactionsRequest, protocol::ListTransactionsResponse>(req);
    if (!reply.ok()) return reply.status();
    if (min_duration_ms >= 0 && reply->version < 1) {
      return kafka_status(protocol::ErrorCode::unsupported_version,
                          "ListTransactions duration filter");
    }
    if (reply->msg.error_code != protocol::ErrorCode::none) {
      return kafka_status(reply->msg.error_code, "ListTransactions");
    }
    if (!reply->msg.unknown_state_filters.empty()) {
      return kafka_status(protocol::ErrorCode::invalid_request, "ListTransactions",
                          "unknown state '" + reply->msg.unknown_state_filters.front() + "'");
    }
    for (const auto& s : reply->msg.transaction_states) {
      out.push_back(TxnListing{s.transactional_id, s.producer_id, s.transaction_state});
    }
  }
  std::sort(out.begin(), out.end(), [](const TxnListing& a, const TxnListing& b) {
    return a.transactional_id < b.transactional_id;
  });
  return out;
}

Result<TxnDescription> Client::describe_transaction(const std::string& txn_id) {
  auto conn = txn_coordinator_connection(txn_id);
  if (!conn.ok()) return conn.status();
  protocol::DescribeTransactionsRequest req;
  req.transactional_ids = {txn_id};
  auto reply =
      (*conn)->call<protocol::DescribeTransactionsRequest, protocol::DescribeTransactionsResponse>(
          req);
  if (!reply.ok()) return reply.status();
  for (const auto& s : reply->msg.transaction_states) {
    if (s.transactional_id != txn_id) continue;
    if (s.error_code != protocol::ErrorCode::none)
      return kafka_status(s.error_code, txn_ctx(txn_id));
    TxnDescription d;
    d.transactional_id = s.transactional_id;
    d.state = s.transaction_state;
    d.timeout_ms = s.transaction_timeout_ms;
    d.start_time_ms = s.transaction_start_time_ms;
    d.producer_id = s.producer_id;
    d.producer_epoch = s.producer_epoch;
    for (const auto& t : s.topics) {
      TopicPartitions tp{t.name, t.partition_indexes};
      std::sort(tp.partitions.begin(), tp.partitions.end());
      d.partitions.push_back(std::move(tp));
    }
    std::sort(d.partitions.begin(), d.partitions.end(),
              [](const auto& a, const auto& b) { return a.topic < b.topic; });
    return d;
  }
  return connection_status("DescribeTransactions response lacks " + txn_ctx(txn_id));
}

Result<std::vector<PartitionProducers>> Client::describe_producers(
    const std::string& topic, std::vector<int32_t> partitions) {
  if (partitions.empty()) {
    auto info = this->topic(topic);
    if (!info.ok()) return info.status();
    for (const auto& p : info->partitions) partitions.push_back(p.partition);
  }
  std::sort(partitions.begin(), partitions.end());
  std::vector<PartitionProducers> out;
  for (int32_t p : partitions) {
    auto conn = leader_connection(topic, p);
    if (!conn.ok()) return conn.status();
    protocol::DescribeProducersRequest req;
    req.topics.push_back({topic, {p}});
    auto reply =
        (*conn)->call<protocol::DescribeProducersRequest, protocol::DescribeProducersResponse>(req);
    if (!reply.ok()) return reply.status();
    bool found = false;
    for (const auto& t : reply->msg.topics) {
      for (const auto& rp : t.partitions) {
        if (t.name != topic || rp.partition_index != p) continue;
        if (rp.error_code != protocol::ErrorCode::none) {
          return kafka_status(rp.error_code, tp_ctx(topic, p), rp.error_message.value_or(""));
        }
        found = true;
        PartitionProducers pp;
        pp.partition = p;
        for (const auto& s : rp.active_producers) {
          pp.producers.push_back(ActiveProducer{s.producer_id, s.producer_epoch, s.last_sequence,
                                                s.last_timestamp, s.coordinator_epoch,
                                                s.current_txn_start_offset});
        }
        out.push_back(std::move(pp));
      }
    }
    if (!found) return connection_status("DescribeProducers response lacks " + tp_ctx(topic, p));
  }
  return out;
}

Status Client::write_txn_marker(const std::string& topic, int32_t partition, int64_t producer_id,
                                int16_t epoch, int32_t coordinator_epoch, bool commit) {
  auto conn = leader_connection(topic, partition);
  if (!conn.ok()) return conn.status();
  protocol::WriteTxnMarkersRequest req;
  auto& m = req.markers.emplace_back();
  m.producer_id = producer_id;
  m.producer_epoch = epoch;
  m.transaction_result = commit;
  m.coordinator_epoch = coordinator_epoch;
  m.topics.push_back({topic, {partition}});
  auto reply =
      (*conn)->call<protocol::WriteTxnMarkersRequest, protocol::WriteTxnMarkersResponse>(req);
  if (!reply.ok()) return reply.status();
  for (const auto& rm : reply->msg.markers) {
    for (const auto& t : rm.topics) {
      for (const auto& rp : t.partitions) {
        if (t.name != topic || rp.partition_index != partition) continue;
        if (rp.error_code != protocol::ErrorCode::none) {
          return kafka_status(rp.error_code, tp_ctx(topic, partition));
        }
        return Status::Ok();
      }
    }
  }
  return connection_status("WriteTxnMarkers response lacks " + tp_ctx(topic, partition));
}

}  // namespace strata::client
