// CreateTopics (19): partitions (-1 = num.partitions), replication factor (-1 or 1; more needs
// clustering → INVALID_REPLICATION_FACTOR), manual assignments (only this broker), configs
// (validated → INVALID_CONFIG naming the key), validate_only. v5+ echoes the effective configs.
#include "protocol/messages/create_topics.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/config/dynamic_config.h"
#include "broker/handlers/handlers.h"
#include "broker/pk/pk_tables.h"
#include "broker/schema/table_schema.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;

// Kafka's code for a failed TopicRegistry::create.
ErrorCode create_error(const Status& st) {
  switch (st.code()) {
    case Errc::already_exists:
      return ErrorCode::topic_already_exists;
    case Errc::too_large:
      return ErrorCode::policy_violation;  // max.broker.partitions, descriptor budget
    case Errc::invalid_argument:
      return ErrorCode::invalid_config;
    default:
      return ErrorCode::kafka_storage_error;
  }
}
// The same effective values and sources DescribeConfigs reports (dynamic layers included).
// Kafka: without DESCRIBE_CONFIGS on the topic they are withheld (topic_config_error_code).
void echo_configs(RequestContext& ctx, const std::map<std::string, std::string>& configs,
                  protocol::CreateTopicsResponse::TopicResult& out) {
  if (!authorize_topic(ctx, AclOperation::describe_configs, out.name)) {
    out.topic_config_error_code = ErrorCode::topic_authorization_failed;
    return;
  }
  out.configs.emplace();
  for (const auto& e : ctx.svc.dynamic_config.describe_topic(configs, {})) {
    auto& c = out.configs->emplace_back();
    c.name = e.name;
    c.value = e.value;
    c.read_only = e.read_only;
    c.is_sensitive = e.sensitive;
    c.config_source = static_cast<int8_t>(e.source);
  }
}

// Cluster mode: configs are checked here, placement and the write go through etcd (any broker
// may create; brokers holding replicas create their local logs from the view).
void create_in_cluster(RequestContext& ctx, const protocol::CreateTopicsRequest::Topic& rt,
                       int32_t partitions, const std::map<std::string, std::string>& configs,
                       bool validate_only, protocol::CreateTopicsResponse::TopicResult& out) {
  auto& cluster = *ctx.svc.cluster;
  auto fail = [&out](ErrorCode e, std::string msg) {
    out.error_code = e;
    out.error_message = std::move(msg);
  };
  cluster::NewTopic nt;
  nt.name = rt.name;
  nt.topic_id = protocol::Uuid::random().to_string();
  nt.partitions = partitions;
  nt.replication_factor = rt.replication_factor == -1 ? cluster.options().default_replication_factor
                                                      : rt.replication_factor;
  for (const auto& a : rt.assignments) nt.assignment.push_back(a.broker_ids);
  if (!nt.assignment.empty())
    nt.replication_factor = static_cast<int32_t>(nt.assignment.front().size());
  nt.configs = configs;
  if (nt.replication_factor <= 0) {
    fail(ErrorCode::invalid_replication_factor, "Replication factor must be larger than 0.");
    return;
  }
  // Config values and the name are checked by the same code as on one node.
  auto checked = ctx.svc.topics.create(rt.name, partitions, configs, /*validate_only=*/true);
  if (!checked.ok() && checked.status().code() != Errc::already_exists) {
    fail(create_error(checked.status()), checked.status().message());
    return;
  }
  auto s = cluster.snapshot();
  if (s->topics.count(rt.name)) {
    fail(ErrorCode::topic_already_exists, "Topic '" + rt.name + "' already exists.");
    return;
  }
  if (nt.assignment.empty() && nt.replication_factor > static_cast<int32_t>(s->brokers.size())) {
    fail(ErrorCode::invalid_replication_factor,
         "Replication factor: " + std::to_string(nt.replication_factor) +
             " larger than available brokers: " + std::to_string(s->brokers.size()) + ".");
    return;
  }
  if (!validate_only) {
    auto created = cluster.create_topic(nt);
    if (!created.ok()) {
      const auto& st = created.status();
      switch (st.code()) {
        case Errc::already_exists:
          fail(ErrorCode::topic_already_exists, st.message());
          break;
        case Errc::invalid_argument:
          fail(nt.assignment.empty() ? ErrorCode::invalid_replication_factor
                                     : ErrorCode::invalid_replica_assignment,
               st.message());
          break;
        default:  // etcd unreachable or the outcome unknown: retriable for clients
          spdlog::error("creating topic {} in the cluster failed: {}", rt.name, st.to_string());
          fail(ErrorCode::request_timed_out, st.message());
      }
      return;
    }
    spdlog::info("created topic {} ({} partitions, replication factor {}, id {})", rt.name,
                 partitions, nt.replication_factor, nt.topic_id);
    if (auto id = protocol::Uuid::parse(created->topic_id)) out.topic_id = *id;
  }
  out.num_partitions = partitions;
  out.replication_factor = static_cast<int16_t>(nt.replication_factor);
  echo_configs(ctx, configs, out);
}
}  // namespace

void create_topics(RequestContext& ctx, protocol::Reader& body) {
  protocol::CreateTopicsRequest req;
  req.decode(body, ctx.version);
  auto& svc = ctx.svc;
  protocol::CreateTopicsResponse resp;
  const bool may_create_cluster =
      may(ctx, AclOperation::create, ResourceType::cluster, security::kClusterName);

  for (const auto& rt : req.topics) {
    auto& out = resp.topics.emplace_back();
    out.name = rt.name;
    out.num_partitions = -1;
    out.replication_factor = -1;
    auto fail = [&out](ErrorCode e, std::string msg) {
      out.error_code = e;
      out.error_message = std::move(msg);
    };
    // Kafka: CREATE on the cluster (a missing one is not audited) or on the topic.
    if (!may_create_cluster && !authorize_topic(ctx, AclOperation::create, rt.name)) {
      fail(ErrorCode::topic_authorization_failed, "Authorization failed.");
      continue;
    }

    if (!valid_topic_name(rt.name)) {
      fail(ErrorCode::invalid_topic_exception,
           "Topic name '" + rt.name + "' is illegal: use 1-249 characters of [a-zA-Z0-9._-]");
      continue;
    }
    int32_t partitions = rt.num_partitions;
    if (!rt.assignments.empty()) {
      if (rt.num_partitions != -1 || rt.replication_factor != -1) {
        fail(ErrorCode::invalid_request,
             "Both numPartitions or replicationFactor and replicasAssignments were set.");
        continue;
      }
      bool ok = true;
      for (const auto& a : rt.assignments) {
        if (a.broker_ids.size() != 1 || a.broker_ids[0] != svc.node_id) ok = false;
      }
      if (!ok && !svc.cluster) {
        fail(ErrorCode::invalid_replica_assignment,
             "Replica assignments may only name this broker (node " + std::to_string(svc.node_id) +
                 ") once per partition");
        continue;
      }
      partitions = static_cast<int32_t>(rt.assignments.size());
    }
    if (partitions == -1) partitions = svc.config.num_partitions;
    if (partitions <= 0) {
      fail(ErrorCode::invalid_partitions, "Number of partitions must be larger than 0.");
      continue;
    }
    std::map<std::string, std::string> configs;
    for (const auto& c : rt.configs) {
      if (c.value.has_value()) configs[c.name] = *c.value;
    }
    // A confluent table's schema is checked and pinned (table.value.schema.id) here (in a
    // cluster, read from the registry's writer).
    if (Status st =
            schema::pin_table_schema(svc.pk_tables.registry_handle()->source.load(), configs);
        !st.ok()) {
      fail(ErrorCode::invalid_config, st.message());
      continue;
    }
    if (svc.cluster) {
      create_in_cluster(ctx, rt, partitions, configs, req.validate_only, out);
      continue;
    }
    if (rt.replication_factor != -1 && rt.replication_factor != 1) {
      fail(ErrorCode::invalid_replication_factor,
           "Replication factor " + std::to_string(rt.replication_factor) +
               " is larger than the number of brokers (1): clustering is not available yet");
      continue;
    }
    auto created = svc.topics.create(rt.name, partitions, configs, req.validate_only);
    if (!created.ok()) {
      const auto& st = created.status();
      const ErrorCode e = create_error(st);
      if (e == ErrorCode::kafka_storage_error) {
        spdlog::error("creating topic {} failed: {}", rt.name, st.to_string());
      }
      fail(e, e == ErrorCode::topic_already_exists ? "Topic '" + rt.name + "' already exists."
                                                   : st.message());
      continue;
    }
    const auto& t = *created.value();
    out.topic_id = t.id;
    out.num_partitions = partitions;
    out.replication_factor = 1;
    if (!req.validate_only) {
      spdlog::info("created topic {} ({} partitions, id {})", t.name, partitions, t.id.to_string());
    }
    echo_configs(ctx, configs, out);
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
