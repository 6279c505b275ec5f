// LookupAsOf (extension key 16007, v0; protocol/ext/lookup_as_of.proto): rows of primary-key
// tables as of a point in the past — per (key, point), the key's newest change at or before the
// point, by offset or by record timestamp — from the history index of tables created with
// table.history.enabled=true (pkindex/pk_history.cc). Everything else is Lookup's (one shape,
// ext_keyed_read.h): the same limits, byte budget, truncation, applied-offset token, follower
// reads, projection and per-partition errors; a table without history is
// INVALID_REQUEST, a point the history no longer covers a per-key OFFSET_OUT_OF_RANGE with the
// earliest covered point.
#include "broker/handlers/ext_keyed_read.h"
#include "broker/handlers/handlers.h"
#include "broker/pk/pk_tables.h"
#include "protocol/ext/lookup_as_of.pb.h"

namespace strata::broker::handlers {

namespace {
// Newer changes a response's time reads may step over (after its first key, which is always
// answered): a hot key read far in its past costs one step per change since; past this budget
// the remaining keys come back truncated, for the client's next round.
constexpr uint64_t kMaxSteps = 1u << 20;
}  // namespace

void ext_lookup_as_of(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  uint64_t steps = kMaxSteps;
  bool first = true;  // the response's first key is answered whatever it costs
  serve_keyed_read<strata::ext::LookupAsOfRequest, strata::ext::LookupAsOfResponse>(
      ctx, body, "LookupAsOf",
      [&](const KeyedReadPartition& part, const auto& req, const auto& p, auto& pout,
          auto&& fail) -> uint64_t {
        const pkindex::AsOf::Kind kind = req.kind() == strata::ext::LookupAsOfRequest::OFFSET
                                             ? pkindex::AsOf::Kind::offset
                                             : pkindex::AsOf::Kind::timestamp;
        const auto& state = part.state;
        if (!state->options().table.history) {
          fail(ErrorCode::invalid_request,
               part.topic + " keeps no history: create it with table.history.enabled=true");
          return 0;
        }
        // After the applied offset is read: the reader's view holds at least what it says.
        pout.set_applied_offset(state->applied_offset() + 1);
        auto reader = state->history_reader();
        if (!reader.ok()) {
          fail(ErrorCode::kafka_storage_error, reader.status().message());
          return 0;
        }
        uint64_t served = 0;
        for (const auto& k : p.keys()) {
          auto* r = pout.add_rows();
          r->set_offset(-1);
          r->set_timestamp(-1);
          if (part.served_bytes >= part.budget || steps == 0) {
            r->set_truncated(true);
            continue;
          }
          auto row =
              reader->lookup(std::span<const uint8_t>(
                                 reinterpret_cast<const uint8_t*>(k.key().data()), k.key().size()),
                             pkindex::AsOf{kind, k.at()}, first ? nullptr : &steps);
          first = false;
          if (!row.ok()) {
            pout.clear_rows();
            fail(ErrorCode::kafka_storage_error, row.status().message());
            return served;
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
          part.projection.apply(row->value);
          part.served_bytes += row->value.size();
          r->set_value(std::move(row->value));
        }
        return served;
      });
}

}  // namespace strata::broker::handlers
