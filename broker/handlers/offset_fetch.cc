// OffsetFetch (9) v1-9: one group (v1-7; null topics = all from v2) or several groups (v8+).
// Partitions without a committed offset answer -1 with no error, as Kafka does.
#include "protocol/messages/offset_fetch.h"

#include "broker/group/group_coordinator.h"
#include "broker/handlers/handlers.h"
#include "broker/services.h"

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
    const protocol::ErrorCode err = coord.fetch_offsets(req.group_id, requested, got);
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
      og.error_code = coord.fetch_offsets(g.group_id, requested, got);
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
