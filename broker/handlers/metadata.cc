// Metadata (3): brokers (just this one), cluster id, this broker as controller, and topics with
// their ids, partitions and current leader epochs. Topic list semantics: v0 empty = all topics;
// v1+ null = all, empty = none. v10+ may name topics by id (v12: unknown id → UNKNOWN_TOPIC_ID).
// Unknown names are auto-created when auto.create.topics.enable and the request allows it (v4+).
#include "protocol/messages/metadata.h"

#include <spdlog/spdlog.h>

#include "broker/handlers/handlers.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {

using protocol::ErrorCode;
constexpr int32_t kAuthorizedOpsOmitted = INT32_MIN;

template <typename TopicOut>
void fill_topic(RequestContext& ctx, const TopicEntry& t, TopicOut& out) {
  out.error_code = ErrorCode::none;
  out.name = t.name;
  out.topic_id = t.id;
  out.is_internal = false;
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

}  // namespace

void metadata(RequestContext& ctx, protocol::Reader& body) {
  protocol::MetadataRequest req;
  req.decode(body, ctx.version);
  auto& svc = ctx.svc;

  protocol::MetadataResponse resp;
  auto& b = resp.brokers.emplace_back();
  b.node_id = svc.node_id;
  b.host = svc.advertised.host;
  b.port = svc.advertised.port;
  resp.cluster_id = svc.cluster_id;
  resp.controller_id = svc.node_id;
  resp.cluster_authorized_operations = kAuthorizedOpsOmitted;

  const bool all = !req.topics.has_value() || (ctx.version == 0 && req.topics->empty());
  if (all) {
    for (const auto& t : svc.topics.list()) fill_topic(ctx, *t, resp.topics.emplace_back());
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
    } else {
      const std::string& name = *rt.name;
      t = svc.topics.find(name);
      if (!t && !valid_topic_name(name)) {
        out.error_code = ErrorCode::invalid_topic_exception;
        out.name = name;
        continue;
      }
      if (!t && may_create) {
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
