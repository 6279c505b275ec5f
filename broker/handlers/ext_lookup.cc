// Lookup (extension key 16000, v0; protocol/ext/lookup.proto): current rows of primary-key tables
// by key, many keys for many partitions per request. Rows come from the applied state; a produce
// is acknowledged only after its apply, so a Lookup sent after the acknowledgement sees the write.
// Errors per partition (Kafka codes): UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST for a log topic,
// KAFKA_STORAGE_ERROR; an undecodable body -> top-level INVALID_REQUEST.
#include <spdlog/spdlog.h>

#include <chrono>

#include "broker/broker.h"
#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk_tables.h"
#include "protocol/ext/lookup.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr size_t kMaxKeys = 100000;

int32_t code(ErrorCode e) { return static_cast<int32_t>(e); }
}  // namespace

void ext_lookup(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::LookupRequest req;
  strata::ext::LookupResponse resp;
  if (!parse_ext_body(body, req)) {
    resp.set_error_code(code(ErrorCode::invalid_request));
    resp.set_error_message("undecodable LookupRequest");
    respond_ext(ctx, resp);
    return;
  }
  size_t total = 0;
  for (const auto& t : req.topics()) {
    for (const auto& p : t.partitions()) total += static_cast<size_t>(p.keys_size());
  }
  if (total > kMaxKeys) {
    resp.set_error_code(code(ErrorCode::invalid_request));
    resp.set_error_message("at most " + std::to_string(kMaxKeys) + " keys per Lookup");
    respond_ext(ctx, resp);
    return;
  }
  for (const auto& t : req.topics()) {
    auto* tout = resp.add_topics();
    tout->set_topic(t.topic());
    auto topic = ctx.broker.topics().find(t.topic());
    for (const auto& p : t.partitions()) {
      auto* pout = tout->add_partitions();
      pout->set_partition(p.partition());
      auto fail = [&](ErrorCode e, std::string msg) {
        pout->set_error_code(code(e));
        pout->set_error_message(std::move(msg));
        ctx.broker.metrics().request_error(ctx.api_key, static_cast<int16_t>(e));
      };
      auto target = resolve_pk_partition(ctx, topic.get(), t.topic(), p.partition());
      if (!target.state) {
        fail(target.error, std::move(target.message));
        continue;
      }
      const auto& state = target.state;
      const auto started = std::chrono::steady_clock::now();
      for (const auto& key : p.keys()) {
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
        if (row->found) r->set_value(std::move(row->value));
      }
      if (pout->error_code() == 0) {  // PK lookup metrics
        auto& m = ctx.broker.metrics();
        auto& tc = *topic->counters;
        tc.pk_lookups.fetch_add(1, std::memory_order_relaxed);
        tc.pk_keys.fetch_add(static_cast<uint64_t>(p.keys_size()), std::memory_order_relaxed);
        m.pk_lookup_latency().observe(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
      }
    }
  }
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
