// Metadata (3): brokers (just this one), cluster id, this broker as controller, and topics with
// their ids, partitions and current leader epochs. Topic list semantics: v0 empty = all topics;
// v1+ null = all, empty = none. v10+ may name topics by id (v12: unknown id → UNKNOWN_TOPIC_ID).
// Unknown names are auto-created when auto.create.topics.enable and the request allows it (v4+);
// such a request is answered from the blocking pool (a topic's files created and synced, or an
// etcd write in cluster mode), not on its connection's I/O thread, whose other connections wait
// for nothing.
#include "protocol/messages/metadata.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/group/log_group_journal.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {

using protocol::ErrorCode;
constexpr int32_t kAuthorizedOpsOmitted = INT32_MIN;

// Kafka: a listing of all topics silently leaves out those the principal may not DESCRIBE.
bool listed(const RequestContext& ctx, const std::string& topic) {
  return may(ctx, AclOperation::describe, ResourceType::topic, topic);
}
// Auto-creation needs CREATE on the cluster (not audited when missing) or on the topic.
bool may_auto_create(const RequestContext& ctx, const std::string& topic) {
  return may(ctx, AclOperation::create, ResourceType::cluster, security::kClusterName) ||
         authorize_topic(ctx, AclOperation::create, topic);
}
// A named topic the principal may not DESCRIBE: refused without saying whether it exists.
template <typename TopicOut>
void refuse(TopicOut& out, const std::string& name) {
  out.error_code = ErrorCode::topic_authorization_failed;
  out.name = name;
}

template <typename TopicOut>
void fill_topic(RequestContext& ctx, const TopicEntry& t, TopicOut& out) {
  out.error_code = ErrorCode::none;
  out.name = t.name;
  out.topic_id = t.id;
  out.is_internal = is_internal_topic(t.name);
  out.topic_authorized_operations = kAuthorizedOpsOmitted;
  for (int32_t i = 0; i < static_cast<int32_t>(t.partitions.size()); ++i) {
    auto& p = out.partitions.emplace_back();
    p.error_code = ErrorCode::none;
    p.partition_index = i;
    p.leader_id = ctx.svc.node_id;
    p.leader_epoch = t.partitions[i]->leader_epoch();
    p.replica_nodes = {ctx.svc.node_id};
    p.isr_nodes = {ctx.svc.node_id};
  }
}

// Cluster mode: everything comes from the cluster view (etcd), not from local logs.
template <typename TopicOut>
void fill_cluster_topic(const cluster::ClusterSnapshot& s, const cluster::TopicRecord& t,
                        TopicOut& out) {
  out.error_code = ErrorCode::none;
  out.name = t.name;
  if (auto id = protocol::Uuid::parse(t.topic_id)) out.topic_id = *id;
  out.is_internal = is_internal_topic(t.name);
  out.topic_authorized_operations = kAuthorizedOpsOmitted;
  for (int32_t i = 0; i < static_cast<int32_t>(t.replicas.size()); ++i) {
    auto& p = out.partitions.emplace_back();
    p.partition_index = i;
    p.replica_nodes = t.replicas[i];
    for (int32_t r : t.replicas[i]) {
      if (!s.brokers.count(r)) p.offline_replicas.push_back(r);
    }
    const auto* vp = s.partition(t.name, i);
    p.leader_id = vp ? vp->state.leader : -1;
    p.leader_epoch = vp ? vp->state.leader_epoch : -1;
    if (vp) p.isr_nodes = vp->state.isr;
    p.error_code = p.leader_id < 0 ? ErrorCode::leader_not_available : ErrorCode::none;
  }
}

// Whether answering would create a topic here: a valid name the broker does not know, that the
// principal may describe and create (checked without audit: the pass that answers audits), and
// that this broker creates itself (in cluster mode an internal topic is only asked for, from its
// coordinator, asynchronously). A creation that then fails (a policy, the descriptor budget)
// has still taken the trip to the pool.
template <typename Known>
bool would_create(const RequestContext& ctx, const protocol::MetadataRequest& req, Known known) {
  if (!req.topics) return false;
  for (const auto& rt : *req.topics) {
    if (!rt.name || rt.name->empty()) continue;
    const std::string& name = *rt.name;
    if (!valid_topic_name(name) || known(name)) continue;
    if (is_internal_topic(name) && (ctx.svc.cluster || !ctx.svc.internal_topic_journal(name))) {
      continue;
    }
    if (may(ctx, AclOperation::describe, ResourceType::topic, name) &&
        (may(ctx, AclOperation::create, ResourceType::cluster, security::kClusterName) ||
         may(ctx, AclOperation::create, ResourceType::topic, name))) {
      return true;
    }
  }
  return false;
}

void metadata_cluster(RequestContext& ctx, const protocol::MetadataRequest& req) {
  auto& svc = ctx.svc;
  auto& cluster = *svc.cluster;
  auto s = cluster.snapshot();
  protocol::MetadataResponse resp;
  for (const auto& [id, b] : s->brokers) {
    auto& out = resp.brokers.emplace_back();
    out.node_id = id;
    std::tie(out.host, out.port) = cluster::endpoint_for(b, ctx.responder.session().listener);
    if (!b.rack.empty()) out.rack = b.rack;
  }
  resp.cluster_id = cluster.cluster_id();
  resp.controller_id = s->controller ? s->controller->id : -1;
  resp.cluster_authorized_operations = kAuthorizedOpsOmitted;
  const bool all = !req.topics.has_value() || (ctx.version == 0 && req.topics->empty());
  if (all) {
    for (const auto& [name, t] : s->topics) {
      if (listed(ctx, name)) fill_cluster_topic(*s, t, resp.topics.emplace_back());
    }
    ctx.respond(resp);
    return;
  }
  const bool may_create = svc.config.auto_create_topics_enable && req.allow_auto_topic_creation;
  for (const auto& rt : *req.topics) {
    auto& out = resp.topics.emplace_back();
    out.topic_authorized_operations = kAuthorizedOpsOmitted;
    const cluster::TopicRecord* t = nullptr;
    if (!rt.name.has_value() || rt.name->empty()) {
      const std::string wanted = rt.topic_id.to_string();
      for (const auto& [name, rec] : s->topics) {
        if (rec.topic_id == wanted) t = &rec;
      }
      if (!t) {
        out.error_code = ErrorCode::unknown_topic_id;
        out.topic_id = rt.topic_id;
        continue;
      }
      if (!authorize_topic(ctx, AclOperation::describe, t->name)) {  // ids are not secret
        out.error_code = ErrorCode::topic_authorization_failed;
        out.topic_id = rt.topic_id;
        continue;
      }
      fill_cluster_topic(*s, *t, out);
      continue;
    }
    const std::string& name = *rt.name;
    out.name = name;
    if (!authorize_topic(ctx, AclOperation::describe, name)) {
      refuse(out, name);
      continue;
    }
    auto it = s->topics.find(name);
    if (it != s->topics.end()) {
      fill_cluster_topic(*s, it->second, out);
      continue;
    }
    if (!valid_topic_name(name)) {
      out.error_code = ErrorCode::invalid_topic_exception;
      continue;
    }
    out.error_code = ErrorCode::unknown_topic_or_partition;
    if (!may_create) continue;
    if (!may_auto_create(ctx, name)) {
      refuse(out, name);
      continue;
    }
    if (is_internal_topic(name)) {  // created as its coordinator needs it, as Kafka does
      // Off the I/O thread; meanwhile LEADER_NOT_AVAILABLE, Kafka's answer while it creates one.
      if (auto* journal = svc.internal_topic_journal(name)) {
        journal->request_cluster_topic();
        out.error_code = ErrorCode::leader_not_available;
      }
      continue;
    }
    cluster::NewTopic nt;
    nt.name = name;
    nt.topic_id = protocol::Uuid::random().to_string();
    nt.partitions = svc.config.num_partitions;
    nt.replication_factor = cluster.options().default_replication_factor;
    if (!ctx.may_block) {  // deleted since the pre-check found it (a race): the pool creates it
      ctx.run_again_blocking = true;
      return;
    }
    auto created = cluster.create_topic(nt);
    if (created.ok() || created.status().code() == Errc::already_exists) {
      if (created.ok()) {
        spdlog::info("auto-created topic {} with {} partitions, replication factor {}", name,
                     nt.partitions, nt.replication_factor);
      }
      out.error_code = ErrorCode::leader_not_available;  // Kafka's answer right after creation
    } else {
      spdlog::warn("auto-creating topic {} failed: {}", name, created.status().to_string());
    }
  }
  ctx.respond(resp);
}

}  // namespace

void metadata(RequestContext& ctx, protocol::Reader& body) {
  protocol::MetadataRequest req;
  req.decode(body, ctx.version);
  auto& svc = ctx.svc;
  if (!ctx.may_block && svc.config.auto_create_topics_enable && req.allow_auto_topic_creation) {
    const auto view = svc.cluster ? svc.cluster->snapshot() : nullptr;
    if (would_create(ctx, req, [&](const std::string& name) {
          return view ? view->topics.count(name) > 0 : svc.topics.find(name) != nullptr;
        })) {
      ctx.run_again_blocking = true;
      return;
    }
  }
  if (svc.cluster) {
    metadata_cluster(ctx, req);
    return;
  }

  protocol::MetadataResponse resp;
  auto& b = resp.brokers.emplace_back();
  b.node_id = svc.node_id;
  const Listener& self = svc.advertised_for(ctx.responder.session().listener);
  b.host = self.host;
  b.port = self.port;
  resp.cluster_id = svc.cluster_id;
  resp.controller_id = svc.node_id;
  resp.cluster_authorized_operations = kAuthorizedOpsOmitted;

  const bool all = !req.topics.has_value() || (ctx.version == 0 && req.topics->empty());
  if (all) {
    for (const auto& t : svc.topics.list()) {
      if (listed(ctx, t->name)) fill_topic(ctx, *t, resp.topics.emplace_back());
    }
    ctx.respond(resp);
    return;
  }

  const bool may_create = svc.config.auto_create_topics_enable && req.allow_auto_topic_creation;
  for (const auto& rt : *req.topics) {
    auto& out = resp.topics.emplace_back();
    out.topic_authorized_operations = kAuthorizedOpsOmitted;
    std::shared_ptr<const TopicEntry> t;
    if (!rt.name.has_value() || rt.name->empty()) {
      // By id (v10+). The zero UUID with no name is meaningless.
      t = svc.topics.find(rt.topic_id);
      if (!t) {
        out.error_code = ErrorCode::unknown_topic_id;
        out.topic_id = rt.topic_id;
        continue;
      }
      if (!authorize_topic(ctx, AclOperation::describe, t->name)) {  // ids are not secret
        out.error_code = ErrorCode::topic_authorization_failed;
        out.topic_id = rt.topic_id;
        continue;
      }
    } else {
      const std::string& name = *rt.name;
      if (!authorize_topic(ctx, AclOperation::describe, name)) {
        refuse(out, name);
        continue;
      }
      t = svc.topics.find(name);
      if (!t && !valid_topic_name(name)) {
        out.error_code = ErrorCode::invalid_topic_exception;
        out.name = name;
        continue;
      }
      if (!t && may_create && !may_auto_create(ctx, name)) {
        refuse(out, name);
        continue;
      }
      if (!t && may_create && !ctx.may_block) {  // deleted since the pre-check found it (a race)
        ctx.run_again_blocking = true;
        return;
      }
      if (!t && may_create && is_internal_topic(name)) {
        if (auto* journal = svc.internal_topic_journal(name)) {
          t = journal->local_topic(true);  // with its coordinator's settings
        }
      } else if (!t && may_create) {
        auto created = svc.topics.create(name, svc.config.num_partitions, {}, false);
        if (created.ok()) {
          spdlog::info("auto-created topic {} with {} partitions", name, svc.config.num_partitions);
          t = created.value();
        } else if (created.status().code() == Errc::already_exists) {
          t = svc.topics.find(name);  // lost a race with another creator
        } else {
          spdlog::warn("auto-creating topic {} failed: {}", name, created.status().to_string());
        }
      }
      if (!t) {
        out.error_code = ErrorCode::unknown_topic_or_partition;
        out.name = name;
        continue;
      }
    }
    fill_topic(ctx, *t, out);
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
