// DeleteTopics (20): by name (v0-5) or by name-or-id (v6; unknown id → UNKNOWN_TOPIC_ID).
#include "protocol/messages/delete_topics.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;

// Deleting the group coordinator's topic would drop every committed offset: refused.
template <typename Out>
void refuse_internal(Out& out) {
  out.error_code = ErrorCode::invalid_topic_exception;
  out.error_message = "Internal topics cannot be deleted";
}

// Kafka: DELETE on the topic, checked before its existence; a topic named by id keeps its name
// hidden when refused.
template <typename Out>
bool refused(RequestContext& ctx, const std::string& name, bool by_id, Out& out) {
  if (authorize_topic(ctx, AclOperation::del, name)) return false;
  out.error_code = ErrorCode::topic_authorization_failed;
  if (by_id) out.name = std::nullopt;
  return true;
}

template <typename Out>
void delete_one(RequestContext& ctx, std::shared_ptr<const TopicEntry> t, Out& out,
                bool by_id = false) {
  if (out.name && refused(ctx, *out.name, by_id, out)) return;
  if (!t) {
    out.error_code = ErrorCode::unknown_topic_or_partition;
    return;
  }
  out.topic_id = t->id;
  if (is_internal_topic(t->name)) return refuse_internal(out);
  ctx.svc.pk_tables.drop(*t);  // close PK states before the directories go
  Status st = ctx.svc.topics.remove(t->name);
  if (st.ok()) {
    spdlog::info("deleted topic {}", t->name);
    ctx.svc.groups.on_topic_deleted(t->name);  // committed offsets go with it
    out.error_code = ErrorCode::none;
  } else if (st.code() == Errc::not_found) {
    out.error_code = ErrorCode::unknown_topic_or_partition;
  } else {
    spdlog::error("deleting topic {} failed: {}", t->name, st.to_string());
    out.error_code = ErrorCode::kafka_storage_error;
    out.error_message = st.message();
  }
}
// Cluster mode: the topic goes from etcd; every broker deletes its local replica from the view.
template <typename Out>
void delete_in_cluster(RequestContext& ctx, const std::string& name, Out& out, bool by_id = false) {
  if (refused(ctx, name, by_id, out)) return;
  auto& cluster = *ctx.svc.cluster;
  auto s = cluster.snapshot();
  auto t = s->topics.find(name);
  if (t == s->topics.end()) {
    out.error_code = ErrorCode::unknown_topic_or_partition;
    return;
  }
  if (auto id = protocol::Uuid::parse(t->second.topic_id)) out.topic_id = *id;
  if (is_internal_topic(name)) return refuse_internal(out);
  Status st = cluster.delete_topic(name);
  if (st.ok()) {
    spdlog::info("deleted topic {} from the cluster", name);
    out.error_code = ErrorCode::none;
  } else if (st.code() == Errc::not_found) {
    out.error_code = ErrorCode::unknown_topic_or_partition;
  } else {
    spdlog::error("deleting topic {} from the cluster failed: {}", name, st.to_string());
    out.error_code = ErrorCode::request_timed_out;
    out.error_message = st.message();
  }
}

void delete_topics_cluster(RequestContext& ctx, const protocol::DeleteTopicsRequest& req,
                           protocol::DeleteTopicsResponse& resp) {
  if (ctx.version < 6) {
    for (const auto& name : req.topic_names) {
      auto& out = resp.responses.emplace_back();
      out.name = name;
      delete_in_cluster(ctx, name, out);
    }
    return;
  }
  for (const auto& rt : req.topics) {
    auto& out = resp.responses.emplace_back();
    if (rt.name.has_value()) {
      out.name = rt.name;
      delete_in_cluster(ctx, *rt.name, out);
      continue;
    }
    out.topic_id = rt.topic_id;
    const std::string wanted = rt.topic_id.to_string();
    auto s = ctx.svc.cluster->snapshot();
    const std::string* name = nullptr;
    for (const auto& [n, rec] : s->topics) {
      if (rec.topic_id == wanted) name = &n;
    }
    if (!name) {
      out.error_code = ErrorCode::unknown_topic_id;
      continue;
    }
    out.name = *name;
    delete_in_cluster(ctx, *name, out, /*by_id=*/true);
  }
}
}  // namespace

void delete_topics(RequestContext& ctx, protocol::Reader& body) {
  protocol::DeleteTopicsRequest req;
  req.decode(body, ctx.version);
  protocol::DeleteTopicsResponse resp;
  if (ctx.svc.cluster) {
    delete_topics_cluster(ctx, req, resp);
    ctx.respond(resp);
    return;
  }
  if (ctx.version < 6) {
    for (const auto& name : req.topic_names) {
      auto& out = resp.responses.emplace_back();
      out.name = name;
      delete_one(ctx, ctx.svc.topics.find(name), out);
    }
  } else {
    for (const auto& rt : req.topics) {
      auto& out = resp.responses.emplace_back();
      std::shared_ptr<const TopicEntry> t;
      if (rt.name.has_value()) {
        out.name = rt.name;
        t = ctx.svc.topics.find(*rt.name);
        delete_one(ctx, t, out);
      } else {
        t = ctx.svc.topics.find(rt.topic_id);
        out.topic_id = rt.topic_id;
        if (!t) {
          out.error_code = ErrorCode::unknown_topic_id;
          continue;
        }
        out.name = t->name;
        delete_one(ctx, t, out, /*by_id=*/true);
      }
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
