// Lookup (extension key 16000, v0; protocol/ext/lookup.proto): current rows of primary-key tables
// by key, many keys for many partitions per request. Rows come from the applied state; a produce
// is acknowledged only after its apply, so a Lookup sent after the acknowledgement sees the write.
// One byte budget bounds the whole answer (max_bytes, a soft cap on value bytes as Scan's, at
// least one row): once the values served reach it, the remaining keys are not read and come back
// marked truncated, for the client to ask again.
// Errors per partition (Kafka codes): UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST for a log topic,
// KAFKA_STORAGE_ERROR, NOT_LEADER_OR_FOLLOWER (cluster: not the leader, or with follower_read not
// a replica), OFFSET_NOT_AVAILABLE (the state has not applied the caller's min_offset yet:
// retriable, as Kafka uses it for a replica not caught up). Each partition's answer carries the
// replica's applied offset, the token for a later read. Top level INVALID_REQUEST: an undecodable
// body, a negative max_bytes, and (checked on the wire bytes, before anything is decoded) a body
// over 32 MiB or more than 100,000 keys. Kafka itself closes a connection whose request is too
// large (socket.request.max.bytes) and has no code for it; a Lookup within the frame limit but over
// ours is a bad request of an otherwise healthy client, so it gets INVALID_REQUEST and the
// connection stays open.
#include <spdlog/spdlog.h>

#include <chrono>

#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/ext/lookup.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr size_t kMaxKeys = 100000;
constexpr size_t kMaxBodyBytes = 32u << 20;
constexpr int kKeysPath[] = {1, 2, 2};  // LookupRequest.topics -> partitions -> keys
constexpr size_t kDefaultMaxBytes = 16u << 20;
constexpr size_t kMaxMaxBytes = 64u << 20;

}  // namespace

void ext_lookup(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::LookupRequest req;
  strata::ext::LookupResponse resp;
  auto refuse = [&](std::string msg) {
    set_ext_error(resp, ErrorCode::invalid_request);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  switch (parse_ext_body(body, req, ExtBodyLimits{kMaxBodyBytes, kKeysPath, kMaxKeys})) {
    case ExtBody::ok:
      break;
    case ExtBody::undecodable:
      return refuse("undecodable LookupRequest");
    case ExtBody::too_large:
      return refuse("a LookupRequest is at most " + std::to_string(kMaxBodyBytes) + " bytes");
    case ExtBody::too_many:
      return refuse("at most " + std::to_string(kMaxKeys) + " keys per Lookup");
  }
  if (req.max_bytes() < 0) return refuse("max_bytes must be >= 0");
  const size_t budget = response_budget(ctx.svc, req.max_bytes(), kDefaultMaxBytes, kMaxMaxBytes);
  size_t served_bytes = 0;  // value bytes in the answer so far, all partitions
  for (const auto& t : req.topics()) {
    auto* tout = resp.add_topics();
    tout->set_topic(t.topic());
    // READ on the table's topic, before its existence is looked at.
    const bool readable = authorize_topic(ctx, AclOperation::read, t.topic());
    auto topic = readable ? ctx.svc.topics.find(t.topic()) : nullptr;
    for (const auto& p : t.partitions()) {
      auto* pout = tout->add_partitions();
      pout->set_partition(p.partition());
      auto fail = [&](ErrorCode e, std::string msg) {
        set_ext_error(*pout, e);
        pout->set_error_message(std::move(msg));
        ctx.svc.metrics.request_error(ctx.api_key, e);
      };
      if (!readable) {
        fail(ErrorCode::topic_authorization_failed, "Topic authorization failed.");
        continue;
      }
      auto target =
          resolve_pk_partition(ctx, topic.get(), t.topic(), p.partition(), req.follower_read());
      if (!target.state) {
        fail(target.error, std::move(target.message));
        continue;
      }
      RowProjection projection;
      if (std::string bad = projection.init(*topic, req.columns()); !bad.empty()) {
        fail(ErrorCode::invalid_request, std::move(bad));
        continue;
      }
      const auto& state = target.state;
      // Everything below this offset is in the state (committed rows only on a replica).
      const int64_t applied = state->applied_offset() + 1;
      pout->set_applied_offset(applied);
      if (p.min_offset() > applied) {  // read-your-writes: this replica has not applied it yet
        fail(ErrorCode::offset_not_available,
             "the state of " + t.topic() + "-" + std::to_string(p.partition()) +
                 " covers the log below offset " + std::to_string(applied) + ", not yet " +
                 std::to_string(p.min_offset()) + ": retry");
        continue;
      }
      const auto started = std::chrono::steady_clock::now();
      uint64_t served = 0;
      for (const auto& key : p.keys()) {
        if (served_bytes >= budget) {  // not read at all: the client asks for it again
          auto* r = pout->add_rows();
          r->set_truncated(true);
          r->set_offset(-1);
          r->set_timestamp(-1);
          continue;
        }
        auto row = state->lookup(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(key.data()), key.size()));
        if (!row.ok()) {
          pout->clear_rows();
          fail(ErrorCode::kafka_storage_error, row.status().message());
          break;
        }
        auto* r = pout->add_rows();
        r->set_found(row->found);
        r->set_offset(row->offset);
        r->set_timestamp(row->timestamp);
        if (row->found) projection.apply(row->value);
        served_bytes += row->value.size();
        ++served;
        if (row->found) r->set_value(std::move(row->value));
      }
      if (ext_error(*pout) == ErrorCode::none) {  // PK lookup metrics
        auto& m = ctx.svc.metrics;
        auto& tc = *topic->counters;
        tc.pk_lookups.fetch_add(1, std::memory_order_relaxed);
        tc.pk_keys.fetch_add(served, std::memory_order_relaxed);
        m.pk_lookup_latency().observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      }
    }
  }
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
