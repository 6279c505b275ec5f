// The shape Lookup (ext_lookup.cc) and LookupAsOf (ext_lookup_as_of.cc) share: many keys of many
// partitions per request, checked on the wire bytes before decoding (a body of at most 32 MiB and
// 100,000 keys; beyond either, or a negative max_bytes, a top-level INVALID_REQUEST and the
// connection stays open — Kafka has no code for a too-large request within the frame limit), one
// byte budget for the whole answer, READ authorization per topic before its existence is looked
// at, the partition's state resolved (leader, or any replica with follower_read), the projection
// of typed rows, and the lookup metrics of each partition answered without error. Only how one
// partition's keys are read differs. Used on the connection's strand.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "broker/handlers/ext_common.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

// What a partition's reader is given besides its request and response partitions.
struct KeyedReadPartition {
  const std::string& topic;
  const std::shared_ptr<pkindex::PkState>& state;
  const RowProjection& projection;
  size_t budget;         // value bytes the whole answer may hold
  size_t& served_bytes;  // value bytes answered so far, all partitions
};

// `Req`/`Resp` are the request and response messages (topics -> partitions -> keys, max_bytes,
// follower_read, columns; per partition error_code, error_message, rows). `read(part, req, p,
// pout, fail)` answers the keys of request partition `p` into `pout` and returns how many it
// read, or calls `fail(code, message)` (and then its rows are not answered).
template <typename Req, typename Resp, typename Read>
void serve_keyed_read(RequestContext& ctx, protocol::Reader& body, std::string_view name,
                      Read&& read) {
  using protocol::ErrorCode;
  constexpr size_t kMaxKeys = 100000;
  constexpr size_t kMaxBodyBytes = 32u << 20;
  constexpr int kKeysPath[] = {1, 2, 2};  // topics -> partitions -> keys
  constexpr size_t kDefaultMaxBytes = 16u << 20;
  constexpr size_t kMaxMaxBytes = 64u << 20;
  Req req;
  Resp resp;
  auto refuse = [&](std::string msg) {
    set_ext_error(resp, ErrorCode::invalid_request);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  switch (parse_ext_body(body, req, ExtBodyLimits{kMaxBodyBytes, kKeysPath, kMaxKeys})) {
    case ExtBody::ok:
      break;
    case ExtBody::undecodable:
      return refuse(std::string("undecodable ").append(name).append("Request"));
    case ExtBody::too_large:
      return refuse(std::string("a ").append(name).append("Request is at most ") +
                    std::to_string(kMaxBodyBytes) + " bytes");
    case ExtBody::too_many:
      return refuse("at most " + std::to_string(kMaxKeys) + " keys per " + std::string(name));
  }
  if (req.max_bytes() < 0) return refuse("max_bytes must be >= 0");
  const size_t budget = response_budget(ctx.svc, req.max_bytes(), kDefaultMaxBytes, kMaxMaxBytes);
  size_t served_bytes = 0;
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
      RowProjection projection;
      if (std::string bad = projection.init(*topic, req.columns()); !bad.empty()) {
        fail(ErrorCode::invalid_request, std::move(bad));
        continue;
      }
      const auto started = std::chrono::steady_clock::now();
      const uint64_t served =
          read(KeyedReadPartition{t.topic(), target.state, projection, budget, served_bytes}, req,
               p, *pout, fail);
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
