// ListOffsets (2), v1-7: earliest (-2) = log start, latest (-1) = high watermark, or the last
// stable offset for isolation_level 1 (read_committed, v2+; equal without open transactions; a
// timestamp lookup then answers none at or past it, as Kafka does), max timestamp (-3, v7), else
// the first offset whose record timestamp is >= the target, searching inside batches; none →
// offset -1 / timestamp -1. v4+ reports the leader epoch of the returned offset and validates
// current_leader_epoch.
#include "protocol/messages/list_offsets.h"

#include <spdlog/spdlog.h>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/partition_loop.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int64_t kLatest = -1;
constexpr int64_t kEarliest = -2;
constexpr int64_t kMaxTimestamp = -3;
}  // namespace

void list_offsets(RequestContext& ctx, protocol::Reader& body) {
  protocol::ListOffsetsRequest req;
  req.decode(body, ctx.version);
  protocol::ListOffsetsResponse resp;
  protocol::ListOffsetsResponse::Partition blank;
  blank.timestamp = -1;
  blank.offset = -1;
  blank.leader_epoch = -1;
  answer_partitions(
      ctx.svc.topics, req.topics, resp.topics, blank,
      [&](const std::string& topic) { return authorize_topic(ctx, AclOperation::describe, topic); },
      [&](const auto& rt, const auto& rp, auto& pout, storage::PartitionLog& log) {
        if (ctx.svc.cluster) {  // answered by the leader only
          const ErrorCode e = ctx.svc.cluster->leader_check(
              rt.name, rp.partition_index, ctx.version >= 4 ? rp.current_leader_epoch : -1);
          if (e != ErrorCode::none) return e;
        }
        const int32_t epoch = log.leader_epoch();
        if (ctx.version >= 4 && rp.current_leader_epoch >= 0 && rp.current_leader_epoch != epoch) {
          return rp.current_leader_epoch < epoch ? ErrorCode::fenced_leader_epoch
                                                 : ErrorCode::unknown_leader_epoch;
        }
        auto epoch_of = [&](int64_t offset) {
          return log.epoch_for_offset(offset).value_or(epoch);
        };
        // read_committed (v2+): nothing at or past the last stable offset is answered.
        const bool committed = ctx.version >= 2 && req.isolation_level == 1;
        if (rp.timestamp == kLatest) {
          pout.offset = committed ? log.last_stable_offset() : log.high_watermark();
          pout.leader_epoch = epoch;
        } else if (rp.timestamp == kEarliest) {
          pout.offset = log.log_start_offset();
          pout.leader_epoch = epoch_of(pout.offset);
        } else if (rp.timestamp == kMaxTimestamp || rp.timestamp >= 0) {
          auto found = rp.timestamp == kMaxTimestamp ? log.max_timestamp()
                                                     : log.offset_for_timestamp(rp.timestamp);
          if (!found.ok()) {
            spdlog::error("ListOffsets {}-{}: {}", rt.name, rp.partition_index,
                          found.status().to_string());
            return ErrorCode::kafka_storage_error;
          }
          if (found->has_value() && !(committed && (*found)->offset >= log.last_stable_offset())) {
            pout.offset = (*found)->offset;
            pout.timestamp = (*found)->timestamp;
            pout.leader_epoch = (*found)->leader_epoch;
          }
        } else {
          return ErrorCode::invalid_request;
        }
        return ErrorCode::none;
      });
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
