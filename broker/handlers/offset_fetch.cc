// OffsetFetch (9) v1-9: one group (v1-7; null topics = all from v2) or several groups (v8+).
// Partitions without a committed offset answer -1 with no error, as Kafka does; with
// require_stable (v7+) an offset pending in an open transaction answers UNSTABLE_OFFSET_COMMIT.
#include "protocol/messages/offset_fetch.h"

#include <map>

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/txn/txn_coordinator.h"
#include "broker/txn/txn_forwarder.h"

namespace strata::broker::handlers {

namespace {
using Requested = std::optional<std::vector<std::pair<std::string, std::vector<int32_t>>>>;

// Groups fetched partitions by topic, keeping first-seen topic order.
template <typename TopicOut, typename Fill>
void group_by_topic(const std::vector<group::FetchedPartition>& in, std::vector<TopicOut>& out,
                    Fill fill) {
  for (const auto& fp : in) {
    TopicOut* t = nullptr;
    for (auto& e : out) {
      if (e.name == fp.topic) t = &e;
    }
    if (!t) {
      t = &out.emplace_back();
      t->name = fp.topic;
    }
    fill(t->partitions.emplace_back(), fp);
  }
}
// Kafka: offsets of topics the principal may not DESCRIBE are not disclosed — a partition asked
// for by name is answered TOPIC_AUTHORIZATION_FAILED with offset -1, a topic of an "every
// offset" fetch is left out. `requested` null = every offset.
void hide_unauthorized(const RequestContext& ctx, const Requested& requested,
                       std::vector<group::FetchedPartition>& got) {
  if (!authorizer_enabled(ctx)) return;
  std::map<std::string, bool> allowed;
  auto ok = [&](const std::string& topic) {
    auto it = allowed.find(topic);
    if (it != allowed.end()) return it->second;
    const bool v = requested ? authorize_topic(ctx, AclOperation::describe, topic)
                             : may(ctx, AclOperation::describe, ResourceType::topic, topic);
    allowed.emplace(topic, v);
    return v;
  };
  std::vector<group::FetchedPartition> kept;
  for (auto& fp : got) {
    if (ok(fp.topic)) {
      kept.push_back(std::move(fp));
    } else if (requested) {
      fp.offset = -1;
      fp.leader_epoch = -1;
      fp.metadata = "";
      fp.error = protocol::ErrorCode::topic_authorization_failed;
      kept.push_back(std::move(fp));
    }
  }
  got = std::move(kept);
}

// A group the principal may not DESCRIBE: v0-1 answer per requested partition, v2+ at the top.
void refuse_group(const Requested& requested, std::vector<group::FetchedPartition>& got) {
  got.clear();
  if (!requested) return;
  for (const auto& [topic, partitions] : *requested) {
    for (int32_t p : partitions) {
      group::FetchedPartition fp;
      fp.topic = topic;
      fp.partition = p;
      fp.offset = -1;
      fp.leader_epoch = -1;
      fp.error = protocol::ErrorCode::group_authorization_failed;
      got.push_back(std::move(fp));
    }
  }
}

// require_stable (v7+): a partition whose offset sits in an open transaction (TxnOffsetCommit
// before EndTxn) answers UNSTABLE_OFFSET_COMMIT — the client retries — instead of the older offset.
// In a cluster the offsets may wait at another broker's transaction coordinator: the forwarder
// remembers what it forwarded until EndTxnOffsets ends it.
void mark_unstable(const RequestContext& ctx, bool require_stable, const std::string& group,
                   std::vector<group::FetchedPartition>& got) {
  if (!require_stable || !ctx.svc.txns) return;
  for (auto& fp : got) {
    if (fp.error == protocol::ErrorCode::none &&
        (ctx.svc.txns->has_pending_offset(group, fp.topic, fp.partition) ||
         (ctx.svc.txn_forwarder &&
          ctx.svc.txn_forwarder->pending(group, fp.topic, fp.partition)))) {
      fp.offset = -1;
      fp.leader_epoch = -1;
      fp.metadata = "";
      fp.error = protocol::ErrorCode::unstable_offset_commit;
    }
  }
}

}  // namespace

void offset_fetch(RequestContext& ctx, protocol::Reader& body) {
  protocol::OffsetFetchRequest req;
  req.decode(body, ctx.version);
  protocol::OffsetFetchResponse resp;
  auto& coord = ctx.svc.groups;
  if (ctx.version < 8) {
    Requested requested;
    if (req.topics) {
      requested.emplace();
      for (const auto& t : *req.topics) requested->emplace_back(t.name, t.partition_indexes);
    }
    std::vector<group::FetchedPartition> got;
    protocol::ErrorCode err = protocol::ErrorCode::group_authorization_failed;
    if (authorize_group(ctx, AclOperation::describe, req.group_id)) {
      err = coord.fetch_offsets(req.group_id, requested, got);
      hide_unauthorized(ctx, requested, got);
      mark_unstable(ctx, req.require_stable, req.group_id, got);
    } else if (ctx.version < 2) {
      refuse_group(requested, got);
    }
    if (ctx.version >= 2) resp.error_code = err;
    group_by_topic(got, resp.topics, [&](auto& p, const group::FetchedPartition& fp) {
      p.partition_index = fp.partition;
      p.committed_offset = fp.offset;
      p.committed_leader_epoch = fp.leader_epoch;
      p.metadata = fp.metadata;
      p.error_code = ctx.version < 2 && err != protocol::ErrorCode::none ? err : fp.error;
    });
  } else {
    for (const auto& g : req.groups) {
      Requested requested;
      if (g.topics) {
        requested.emplace();
        for (const auto& t : *g.topics) requested->emplace_back(t.name, t.partition_indexes);
      }
      std::vector<group::FetchedPartition> got;
      auto& og = resp.groups.emplace_back();
      og.group_id = g.group_id;
      if (!authorize_group(ctx, AclOperation::describe, g.group_id)) {
        og.error_code = protocol::ErrorCode::group_authorization_failed;
        continue;
      }
      og.error_code = coord.fetch_offsets(g.group_id, requested, got);
      hide_unauthorized(ctx, requested, got);
      mark_unstable(ctx, req.require_stable, g.group_id, got);
      group_by_topic(got, og.topics, [](auto& p, const group::FetchedPartition& fp) {
        p.partition_index = fp.partition;
        p.committed_offset = fp.offset;
        p.committed_leader_epoch = fp.leader_epoch;
        p.metadata = fp.metadata;
        p.error_code = fp.error;
      });
    }
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
