// ReplicaCheckpoint (extension key 16005, v0; protocol/ext/replica_checkpoint.proto): the leader of
// a primary-key partition lists and serves the files of its newest state checkpoint to a new
// replica (broker/cluster/checkpoint_copier.h), which cannot rebuild the state from a log that no
// longer starts at 0. Chunks are at most 1 MiB; the replica throttles itself. A checkpoint removed
// while it is copied (a newer one replaced it) answers OFFSET_NOT_AVAILABLE: the copy starts over.
#include <algorithm>

#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/pk_checkpoint.h"
#include "protocol/ext/replica_checkpoint.pb.h"
#include "protocol/wire/errors.h"
#include "storage/partition_log.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int32_t kMaxChunk = 1 << 20;
}  // namespace

void ext_replica_checkpoint(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::ReplicaCheckpointRequest req;
  strata::ext::ReplicaCheckpointResponse resp;
  auto fail = [&](ErrorCode e, std::string msg) {
    set_ext_error(resp, e);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  if (!parse_ext_body(body, req)) return fail(ErrorCode::invalid_request, "undecodable request");
  if (!authorize_cluster(ctx, AclOperation::cluster_action)) {  // broker-to-broker only
    return fail(ErrorCode::cluster_authorization_failed, "Cluster authorization failed.");
  }
  auto topic = ctx.svc.topics.find(req.topic());
  auto target = resolve_pk_partition(ctx, topic.get(), req.topic(), req.partition());
  if (!target.state) return fail(target.error, std::move(target.message));
  const std::string& dir = topic->partition(req.partition())->dir();
  int64_t offset = req.checkpoint_offset();
  if (offset < 0) {
    auto offsets = pkindex::checkpoint::list(dir);
    if (!offsets.ok() || offsets->empty()) {
      return fail(ErrorCode::offset_not_available, "no checkpoint of this partition yet");
    }
    offset = offsets->back();
  }
  resp.set_checkpoint_offset(offset);
  if (req.file().empty()) {
    auto files = pkindex::checkpoint::files(dir, offset);
    if (!files.ok()) return fail(ErrorCode::offset_not_available, files.status().message());
    for (const auto& f : *files) {
      auto* out = resp.add_files();
      out->set_name(f.name);
      out->set_size(f.size);
    }
    respond_ext(ctx, resp);
    return;
  }
  const int32_t max = std::clamp(req.max_bytes(), 1, kMaxChunk);
  auto chunk = pkindex::checkpoint::read_chunk(dir, offset, req.file(), req.position(), max);
  if (!chunk.ok()) {
    return fail(chunk.status().code() == Errc::invalid_argument ? ErrorCode::invalid_request
                                                                : ErrorCode::offset_not_available,
                chunk.status().message());
  }
  resp.set_data(std::move(*chunk));
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
