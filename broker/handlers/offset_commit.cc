// OffsetCommit (8) v2-9: unknown topics/partitions get UNKNOWN_TOPIC_OR_PARTITION here; the
// coordinator checks the group (generation, member) and metadata size, and answers once the
// offsets are durable.
#include "protocol/messages/offset_commit.h"

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/partition_loop.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

void offset_commit(RequestContext& ctx, protocol::Reader& body) {
  protocol::OffsetCommitRequest req;
  req.decode(body, ctx.version);
  if (!authorize_group(ctx, AclOperation::read, req.group_id)) {  // Kafka: every partition
    protocol::OffsetCommitResponse resp;
    mirror_partitions(req.topics, resp.topics, protocol::OffsetCommitResponse::Partition{},
                      [](const auto&, const auto&, auto& op) {
                        op.error_code = protocol::ErrorCode::group_authorization_failed;
                      });
    ctx.respond(resp);
    return;
  }
  std::vector<group::CommitPartition> parts;
  for (const auto& t : req.topics) {
    const bool readable = authorize_topic(ctx, AclOperation::read, t.name);
    auto topic = readable ? ctx.svc.topics.find(t.name) : nullptr;
    for (const auto& p : t.partitions) {
      group::CommitPartition cp;
      cp.topic = t.name;
      cp.partition = p.partition_index;
      cp.offset = p.committed_offset;
      cp.leader_epoch = p.committed_leader_epoch;
      cp.metadata = p.committed_metadata;
      if (!readable) {
        cp.error = protocol::ErrorCode::topic_authorization_failed;
      } else if (!topic || !topic->partition(p.partition_index)) {
        cp.error = protocol::ErrorCode::unknown_topic_or_partition;
      }
      parts.push_back(std::move(cp));
    }
  }
  // v2-4 carry an explicit retention; -1 means the broker's offsets.retention.minutes.
  const int64_t retention = ctx.version <= 4 ? req.retention_time_ms : -1;
  // Answered once the offsets are durable in __consumer_offsets (the in-sync replicas have them).
  RequestContext c = ctx;
  auto shared = std::make_shared<protocol::OffsetCommitRequest>(std::move(req));
  ctx.svc.groups.commit(
      shared->group_id, shared->generation_id_or_member_epoch, shared->member_id,
      ctx.version >= 7 ? shared->group_instance_id : std::nullopt, retention, std::move(parts),
      [c, shared](std::vector<group::CommitPartition> done) {
        protocol::OffsetCommitResponse resp;
        size_t i = 0;
        mirror_partitions(
            shared->topics, resp.topics, protocol::OffsetCommitResponse::Partition{},
            [&](const auto&, const auto&, auto& op) { op.error_code = done[i++].error; });
        c.respond(resp);
      });
}

}  // namespace strata::broker::handlers
