// PrefixLookup (extension key 16001, v0; protocol/ext/prefix_lookup.proto): one page of the rows
// of one PK partition whose key starts with a prefix, with a continuation cursor. Errors:
// UNKNOWN_TOPIC_OR_PARTITION; INVALID_REQUEST for a log topic, a limit outside 1..10000 or an
// undecodable body; KAFKA_STORAGE_ERROR.
#include <chrono>

#include "broker/broker.h"
#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk_tables.h"
#include "protocol/ext/prefix_lookup.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int32_t kMaxLimit = 10000;

std::span<const uint8_t> as_span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

void ext_prefix_lookup(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::PrefixLookupRequest req;
  strata::ext::PrefixLookupResponse resp;
  auto fail = [&](ErrorCode e, std::string msg) {
    resp.set_error_code(static_cast<int32_t>(e));
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);  // counts the error
  };
  if (!parse_ext_body(body, req))
    return fail(ErrorCode::invalid_request, "undecodable PrefixLookupRequest");
  if (req.limit() < 1 || req.limit() > kMaxLimit) {
    return fail(ErrorCode::invalid_request, "limit must be within 1.." + std::to_string(kMaxLimit));
  }
  auto topic = ctx.broker.topics().find(req.topic());
  auto target = resolve_pk_partition(ctx, topic.get(), req.topic(), req.partition());
  if (!target.state) return fail(target.error, std::move(target.message));
  const auto& state = target.state;
  std::optional<std::span<const uint8_t>> cursor;
  if (req.has_cursor()) cursor = as_span(req.cursor());
  const auto started = std::chrono::steady_clock::now();
  auto page =
      state->prefix_lookup(as_span(req.prefix()), cursor, static_cast<uint32_t>(req.limit()));
  if (!page.ok()) return fail(ErrorCode::kafka_storage_error, page.status().message());
  for (auto& r : page->rows) {
    auto* out = resp.add_rows();
    out->set_key(std::move(r.key));
    out->set_value(std::move(r.value));
    out->set_offset(r.offset);
    out->set_timestamp(r.timestamp);
  }
  if (page->next_cursor) resp.set_next_cursor(std::move(*page->next_cursor));
  {  // PK lookup metrics (keys = rows returned)
    auto& m = ctx.broker.metrics();
    auto& tc = *topic->counters;
    tc.pk_lookups.fetch_add(1, std::memory_order_relaxed);
    tc.pk_keys.fetch_add(static_cast<uint64_t>(resp.rows_size()), std::memory_order_relaxed);
    m.pk_lookup_latency().observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
