// OffsetDelete (47) v0: deletes a group's committed offsets for partitions it no longer consumes
// (GROUP_SUBSCRIBED_TO_TOPIC for topics its members still subscribe to).
#include "protocol/messages/offset_delete.h"

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void offset_delete(RequestContext& ctx, protocol::Reader& body) {
  protocol::OffsetDeleteRequest req;
  req.decode(body, ctx.version);
  std::vector<group::TopicPartitionError> parts;
  for (const auto& t : req.topics) {
    auto topic = ctx.svc.topics.find(t.name);
    for (const auto& p : t.partitions) {
      group::TopicPartitionError tp{t.name, p.partition_index, 0};
      if (!topic || !topic->partition(p.partition_index)) {
        tp.error = static_cast<int16_t>(protocol::ErrorCode::unknown_topic_or_partition);
      }
      parts.push_back(std::move(tp));
    }
  }
  protocol::OffsetDeleteResponse resp;
  resp.error_code = ctx.svc.groups.delete_offsets(req.group_id, parts);
  if (resp.error_code == 0) {
    size_t i = 0;
    for (const auto& t : req.topics) {
      auto& ot = resp.topics.emplace_back();
      ot.name = t.name;
      for (const auto& p : t.partitions) {
        auto& op = ot.partitions.emplace_back();
        op.partition_index = p.partition_index;
        op.error_code = parts[i++].error;
      }
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
