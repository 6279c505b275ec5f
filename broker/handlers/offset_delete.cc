// OffsetDelete (47) v0: deletes a group's committed offsets for partitions it no longer consumes
// (GROUP_SUBSCRIBED_TO_TOPIC for topics its members still subscribe to).
#include "protocol/messages/offset_delete.h"

#include <memory>

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/partition_loop.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void offset_delete(RequestContext& ctx, protocol::Reader& body) {
  protocol::OffsetDeleteRequest req;
  req.decode(body, ctx.version);
  if (!authorize_group(ctx, AclOperation::del, req.group_id)) {
    protocol::OffsetDeleteResponse resp;
    resp.error_code = protocol::ErrorCode::group_authorization_failed;
    ctx.respond(resp);
    return;
  }
  std::vector<group::TopicPartitionError> parts;
  for (const auto& t : req.topics) {
    const bool readable = authorize_topic(ctx, AclOperation::read, t.name);
    auto topic = readable ? ctx.svc.topics.find(t.name) : nullptr;
    for (const auto& p : t.partitions) {
      group::TopicPartitionError tp{t.name, p.partition_index, protocol::ErrorCode::none};
      if (!readable) {
        tp.error = protocol::ErrorCode::topic_authorization_failed;
      } else if (!topic || !topic->partition(p.partition_index)) {
        tp.error = protocol::ErrorCode::unknown_topic_or_partition;
      }
      parts.push_back(std::move(tp));
    }
  }
  // Answered once the tombstones are durable (or failed).
  RequestContext c = ctx;
  auto shared = std::make_shared<protocol::OffsetDeleteRequest>(std::move(req));
  ctx.svc.groups.delete_offsets(
      shared->group_id, std::move(parts),
      [c, shared](protocol::ErrorCode e, std::vector<group::TopicPartitionError> done) {
        protocol::OffsetDeleteResponse resp;
        resp.error_code = e;
        if (e == protocol::ErrorCode::none) {
          size_t i = 0;
          mirror_partitions(
              shared->topics, resp.topics, protocol::OffsetDeleteResponse::Partition{},
              [&](const auto&, const auto&, auto& op) { op.error_code = done[i++].error; });
        }
        c.respond(resp);
      });
}

}  // namespace strata::broker::handlers
