// CreatePartitions (37), v0-3: grows topics (new partition directories + durable metadata; the
// TopicRegistry entry is replaced so Metadata and Produce see the new partitions at once).
// Per-topic errors as Kafka: UNKNOWN_TOPIC_OR_PARTITION, INVALID_PARTITIONS (not larger than today,
// including negative counts), INVALID_REPLICA_ASSIGNMENT (assignments must name only this broker,
// one per new partition), INVALID_REQUEST (topic named twice). validate_only honoured.
#include "protocol/messages/create_partitions.h"

#include <spdlog/spdlog.h>

#include <map>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/table_config.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;

// Kafka's code for a failed TopicRegistry::add_partitions.
ErrorCode add_partitions_error(const Status& st) {
  switch (st.code()) {
    case Errc::not_found:
      return ErrorCode::unknown_topic_or_partition;
    case Errc::too_large:
      return ErrorCode::policy_violation;  // max.broker.partitions, descriptor budget
    case Errc::invalid_argument:
      return ErrorCode::invalid_partitions;
    default:
      return ErrorCode::kafka_storage_error;
  }
}
// Cluster mode: the new partitions are placed and written through etcd; replicas follow the view.
void grow_in_cluster(RequestContext& ctx, const protocol::CreatePartitionsRequest::Topic& t,
                     bool validate_only, protocol::CreatePartitionsResponse::Result& out) {
  auto fail = [&out](ErrorCode e, std::string msg) {
    out.error_code = e;
    out.error_message = std::move(msg);
  };
  auto s = ctx.svc.cluster->snapshot();
  auto rec = s->topics.find(t.name);
  if (rec == s->topics.end()) {
    fail(ErrorCode::unknown_topic_or_partition, "The topic '" + t.name + "' does not exist.");
    return;
  }
  if (pkindex::is_pk_table(rec->second.configs)) {
    fail(ErrorCode::policy_violation,
         "Cannot add partitions to primary-key table " + t.name + ": keys would change partition");
    return;
  }
  const auto current = static_cast<int32_t>(rec->second.replicas.size());
  if (t.count <= current) {
    fail(ErrorCode::invalid_partitions,
         "Topic currently has " + std::to_string(current) +
             " partitions, which is higher than or equal to the requested " +
             std::to_string(t.count) + ".");
    return;
  }
  if (t.assignments) {
    fail(ErrorCode::invalid_replica_assignment,
         "Explicit assignments of new partitions are not supported in cluster mode yet");
    return;
  }
  out.error_code = ErrorCode::none;
  out.error_message = std::nullopt;
  if (validate_only) return;
  auto grown = ctx.svc.cluster->add_partitions(t.name, t.count);
  if (!grown.ok()) {
    const auto& st = grown.status();
    fail(st.code() == Errc::not_found          ? ErrorCode::unknown_topic_or_partition
         : st.code() == Errc::invalid_argument ? ErrorCode::invalid_replication_factor
                                               : ErrorCode::request_timed_out,
         st.message());
    return;
  }
  spdlog::info("topic {} grown from {} to {} partitions in the cluster", t.name, current, t.count);
}
}  // namespace

void create_partitions(RequestContext& ctx, protocol::Reader& body) {
  protocol::CreatePartitionsRequest req;
  req.decode(body, ctx.version);
  protocol::CreatePartitionsResponse resp;
  std::map<std::string, int> times;
  for (const auto& t : req.topics) ++times[t.name];

  for (const auto& t : req.topics) {
    auto& out = resp.results.emplace_back();
    out.name = t.name;
    auto fail = [&out](ErrorCode e, std::string msg) {
      out.error_code = e;
      out.error_message = std::move(msg);
    };
    if (times[t.name] > 1) {
      fail(ErrorCode::invalid_request, "Duplicate topic in request.");
      continue;
    }
    if (!authorize_topic(ctx, AclOperation::alter, t.name)) {
      fail(ErrorCode::topic_authorization_failed, "The topic authorization is failed.");
      continue;
    }
    if (is_internal_topic(t.name)) {  // a group's partition is its id's hash modulo the count
      fail(ErrorCode::policy_violation,
           "Cannot add partitions to internal topic " + t.name + ": groups would change partition");
      continue;
    }
    if (ctx.svc.cluster) {
      grow_in_cluster(ctx, t, req.validate_only, out);
      continue;
    }
    auto topic = ctx.svc.topics.find(t.name);
    if (!topic) {
      fail(ErrorCode::unknown_topic_or_partition, "The topic '" + t.name + "' does not exist.");
      continue;
    }
    if (pkindex::is_pk_table(topic->configs)) {  // rescaling PK tables is a later stage
      fail(ErrorCode::policy_violation, "Cannot add partitions to primary-key table " + t.name +
                                            ": keys would change partition");
      continue;
    }
    const auto current = static_cast<int32_t>(topic->partitions.size());
    if (t.count <= current) {
      fail(ErrorCode::invalid_partitions,
           t.count == current ? "Topic already has " + std::to_string(current) + " partitions."
                              : "Topic currently has " + std::to_string(current) +
                                    " partitions, which is higher than the requested " +
                                    std::to_string(t.count) + ".");
      continue;
    }
    if (t.assignments) {
      const auto added = static_cast<size_t>(t.count - current);
      if (t.assignments->size() != added) {
        fail(ErrorCode::invalid_replica_assignment,
             "Increasing the number of partitions by " + std::to_string(added) + " but " +
                 std::to_string(t.assignments->size()) + " assignments provided.");
        continue;
      }
      bool ok = true;
      for (const auto& a : *t.assignments) {
        ok &= a.broker_ids.size() == 1 && a.broker_ids[0] == ctx.svc.node_id;
      }
      if (!ok) {
        fail(ErrorCode::invalid_replica_assignment,
             "Replica assignments may only name this broker (node " +
                 std::to_string(ctx.svc.node_id) + ") once per partition");
        continue;
      }
    }
    auto grown = ctx.svc.topics.add_partitions(t.name, t.count, req.validate_only);
    if (!grown.ok()) {
      const auto& st = grown.status();
      const ErrorCode e = add_partitions_error(st);
      if (e == ErrorCode::kafka_storage_error) {
        spdlog::error("adding partitions to {} failed: {}", t.name, st.to_string());
      }
      fail(e, e == ErrorCode::unknown_topic_or_partition
                  ? "The topic '" + t.name + "' does not exist."
                  : st.message());
      continue;
    }
    out.error_code = ErrorCode::none;
    out.error_message = std::nullopt;
    if (!req.validate_only) {
      spdlog::info("topic {} grown from {} to {} partitions", t.name, current, t.count);
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
