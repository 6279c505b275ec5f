// LookupAsOf (extension key 16007, v0; protocol/ext/lookup_as_of.proto): rows of primary-key
// tables as of a point in the past — per (key, point), the key's newest change at or before the
// point, by offset or by record timestamp — from the history index of tables created with
// table.history.enabled=true (pkindex/pk_history.cc). Everything else is Lookup's: the same
// limits, byte budget, truncation, read-your-writes-free applied-offset token, follower reads,
// projection and per-partition errors (ext_lookup.cc); a table without history is
// INVALID_REQUEST, a point the history no longer covers a per-key OFFSET_OUT_OF_RANGE with the
// earliest covered point.
#include <chrono>

#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/ext/lookup_as_of.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr size_t kMaxKeys = 100000;
constexpr size_t kMaxBodyBytes = 32u << 20;
constexpr int kKeysPath[] = {1, 2, 2};  // LookupAsOfRequest.topics -> partitions -> keys
constexpr size_t kDefaultMaxBytes = 16u << 20;
constexpr size_t kMaxMaxBytes = 64u << 20;
// Newer changes a response's time reads may step over (after its first key, which is always
// answered): a hot key read far in its past costs one step per change since; past this budget
// the remaining keys come back truncated, for the client's next round.
constexpr uint64_t kMaxSteps = 1u << 20;
}  // namespace

void ext_lookup_as_of(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::LookupAsOfRequest req;
  strata::ext::LookupAsOfResponse resp;
  auto refuse = [&](std::string msg) {
    set_ext_error(resp, ErrorCode::invalid_request);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  switch (parse_ext_body(body, req, ExtBodyLimits{kMaxBodyBytes, kKeysPath, kMaxKeys})) {
    case ExtBody::ok:
      break;
    case ExtBody::undecodable:
      return refuse("undecodable LookupAsOfRequest");
    case ExtBody::too_large:
      return refuse("a LookupAsOfRequest is at most " + std::to_string(kMaxBodyBytes) + " bytes");
    case ExtBody::too_many:
      return refuse("at most " + std::to_string(kMaxKeys) + " keys per LookupAsOf");
  }
  if (req.max_bytes() < 0) return refuse("max_bytes must be >= 0");
  const pkindex::AsOf::Kind kind = req.kind() == strata::ext::LookupAsOfRequest::OFFSET
                                       ? pkindex::AsOf::Kind::offset
                                       : pkindex::AsOf::Kind::timestamp;
  const size_t budget = response_budget(ctx.svc, req.max_bytes(), kDefaultMaxBytes, kMaxMaxBytes);
  size_t served_bytes = 0;
  uint64_t steps = kMaxSteps;
  bool first = true;  // the response's first key is answered whatever it costs
  for (const auto& t : req.topics()) {
    auto* tout = resp.add_topics();
    tout->set_topic(t.topic());
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
      const auto& state = target.state;
      if (!state->options().table.history) {
        fail(ErrorCode::invalid_request,
             t.topic() + " keeps no history: create it with table.history.enabled=true");
        continue;
      }
      RowProjection projection;
      if (std::string bad = projection.init(*topic, req.columns()); !bad.empty()) {
        fail(ErrorCode::invalid_request, std::move(bad));
        continue;
      }
      pout->set_applied_offset(state->applied_offset() + 1);
      const auto started = std::chrono::steady_clock::now();
      uint64_t served = 0;
      for (const auto& k : p.keys()) {
        auto* r = pout->add_rows();
        r->set_offset(-1);
        r->set_timestamp(-1);
        if (served_bytes >= budget || steps == 0) {
          r->set_truncated(true);
          continue;
        }
        auto row = state->lookup_as_of(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(k.key().data()),
                                     k.key().size()),
            pkindex::AsOf{kind, k.at()}, first ? nullptr : &steps);
        first = false;
        if (!row.ok()) {
          pout->clear_rows();
          fail(ErrorCode::kafka_storage_error, row.status().message());
          break;
        }
        if (row->truncated) {
          r->set_truncated(true);
          continue;
        }
        ++served;
        if (row->out_of_retention) {
          r->set_error_code(static_cast<int32_t>(ErrorCode::offset_out_of_range));
          r->set_earliest(row->earliest);
          continue;
        }
        r->set_found(row->found);
        if (!row->found) continue;
        r->set_offset(row->offset);
        r->set_timestamp(row->timestamp);
        projection.apply(row->value);
        served_bytes += row->value.size();
        r->set_value(std::move(row->value));
      }
      if (ext_error(*pout) == ErrorCode::none) {
        auto& tc = *topic->counters;
        tc.pk_lookups.fetch_add(1, std::memory_order_relaxed);
        tc.pk_keys.fetch_add(served, std::memory_order_relaxed);
        ctx.svc.metrics.pk_lookup_latency().observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      }
    }
  }
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
