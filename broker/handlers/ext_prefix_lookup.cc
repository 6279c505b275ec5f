// PrefixLookup (extension key 16001, v0; protocol/ext/prefix_lookup.proto): one page of the rows
// of one PK partition whose key starts with a prefix, with a continuation cursor. A page holds at
// most `limit` rows and ends after the row whose key + value bytes reach max_bytes (a soft cap as
// Scan's, at least one row), with next_cursor set when more rows may match. Errors:
// UNKNOWN_TOPIC_OR_PARTITION; INVALID_REQUEST for a log topic, a limit outside 1..10000, a
// negative max_bytes, a body over 32 MiB or an undecodable body; KAFKA_STORAGE_ERROR.
#include <algorithm>
#include <chrono>

#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/ext/prefix_lookup.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int32_t kMaxLimit = 10000;
constexpr size_t kMaxBodyBytes = 32u << 20;  // prefix and cursor are keys: far less in practice
constexpr size_t kDefaultMaxBytes = 16u << 20;
constexpr size_t kMaxMaxBytes = 64u << 20;
// PkState::prefix_lookup reads `limit` rows with no byte bound, so the page is read in chunks
// whose rows (each at most max.message.bytes, which the write path enforces) stay within this.
constexpr size_t kMaxChunkBytes = 64u << 20;

std::span<const uint8_t> as_span(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

void ext_prefix_lookup(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::PrefixLookupRequest req;
  strata::ext::PrefixLookupResponse resp;
  auto fail = [&](ErrorCode e, std::string msg) {
    resp.clear_rows();
    resp.clear_next_cursor();
    set_ext_error(resp, e);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);  // counts the error
  };
  switch (parse_ext_body(body, req, ExtBodyLimits{kMaxBodyBytes, {}, 0})) {
    case ExtBody::ok:
      break;
    case ExtBody::too_large:
      return fail(ErrorCode::invalid_request,
                  "a PrefixLookupRequest is at most " + std::to_string(kMaxBodyBytes) + " bytes");
    default:
      return fail(ErrorCode::invalid_request, "undecodable PrefixLookupRequest");
  }
  if (req.limit() < 1 || req.limit() > kMaxLimit) {
    return fail(ErrorCode::invalid_request, "limit must be within 1.." + std::to_string(kMaxLimit));
  }
  if (req.max_bytes() < 0) return fail(ErrorCode::invalid_request, "max_bytes must be >= 0");
  const size_t budget = response_budget(ctx.svc, req.max_bytes(), kDefaultMaxBytes, kMaxMaxBytes);
  if (!authorize_topic(ctx, AclOperation::read, req.topic())) {
    return fail(ErrorCode::topic_authorization_failed, "Topic authorization failed.");
  }
  auto topic = ctx.svc.topics.find(req.topic());
  auto target = resolve_pk_partition(ctx, topic.get(), req.topic(), req.partition());
  if (!target.state) return fail(target.error, std::move(target.message));
  RowProjection projection;
  if (std::string bad = projection.init(*topic, req.columns()); !bad.empty()) {
    return fail(ErrorCode::invalid_request, std::move(bad));
  }
  const auto& state = target.state;
  const size_t max_row = static_cast<size_t>(std::max<int64_t>(topic->config.max_message_bytes, 1));
  const uint32_t rows_per_chunk =
      static_cast<uint32_t>(std::max<size_t>(kMaxChunkBytes / max_row, 1));
  std::optional<std::span<const uint8_t>> cursor;
  if (req.has_cursor()) cursor = as_span(req.cursor());
  const auto started = std::chrono::steady_clock::now();
  uint32_t remaining = static_cast<uint32_t>(req.limit());
  size_t used = 0;     // key + value bytes of the page so far
  size_t largest = 0;  // the largest row seen, to size the next chunk
  bool more = false;   // rows may match past the page
  for (;;) {
    uint32_t chunk = std::min(remaining, rows_per_chunk);
    if (largest > 0) {
      chunk = static_cast<uint32_t>(std::min<size_t>(chunk, (budget - used) / largest + 1));
    }
    auto page = state->prefix_lookup(as_span(req.prefix()), cursor, chunk);
    if (!page.ok()) return fail(ErrorCode::kafka_storage_error, page.status().message());
    size_t taken = 0;
    for (auto& r : page->rows) {
      if (used >= budget) break;  // the page is full; the first row always fits
      projection.apply(r.value);
      const size_t bytes = r.key.size() + r.value.size();
      used += bytes;
      largest = std::max(largest, bytes);
      auto* out = resp.add_rows();
      out->set_key(std::move(r.key));
      out->set_value(std::move(r.value));
      out->set_offset(r.offset);
      out->set_timestamp(r.timestamp);
      ++taken;
    }
    remaining -= static_cast<uint32_t>(taken);
    if (taken < page->rows.size()) {  // the budget ended the page inside this chunk
      more = true;
      break;
    }
    if (!page->next_cursor) break;  // nothing more matches
    if (remaining == 0 || used >= budget) {
      more = true;
      break;
    }
    cursor = as_span(resp.rows(resp.rows_size() - 1).key());
  }
  if (more && resp.rows_size() > 0) resp.set_next_cursor(resp.rows(resp.rows_size() - 1).key());
  {  // PK lookup metrics (keys = rows returned)
    auto& m = ctx.svc.metrics;
    auto& tc = *topic->counters;
    tc.pk_lookups.fetch_add(1, std::memory_order_relaxed);
    tc.pk_keys.fetch_add(static_cast<uint64_t>(resp.rows_size()), std::memory_order_relaxed);
    m.pk_lookup_latency().observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
