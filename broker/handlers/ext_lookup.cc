// Lookup (extension key 16000, v0; protocol/ext/lookup.proto): current rows of primary-key tables
// by key, many keys for many partitions per request. Rows come from the applied state; a produce
// is acknowledged only after its apply, so a Lookup sent after the acknowledgement sees the write.
// One byte budget bounds the whole answer (max_bytes, a soft cap on value bytes as Scan's, at
// least one row): once the values served reach it, the remaining keys come back marked truncated,
// for the client to ask again (keys are read a chunk at a time, so at most one chunk's worth of
// them was read; the rest not at all).
// The request's shape, limits and budget are LookupAsOf's too (ext_keyed_read.h).
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
#include <algorithm>
#include <span>
#include <vector>

#include "broker/handlers/ext_keyed_read.h"
#include "broker/handlers/handlers.h"
#include "broker/pk/pk_tables.h"
#include "protocol/ext/lookup.pb.h"

namespace strata::broker::handlers {

void ext_lookup(RequestContext& ctx, protocol::Reader& body) {
  using protocol::ErrorCode;
  serve_keyed_read<strata::ext::LookupRequest, strata::ext::LookupResponse>(
      ctx, body, "Lookup",
      [](const KeyedReadPartition& part, const auto& /*req*/, const auto& p, auto& pout,
         auto&& fail) -> uint64_t {
        // Everything below this offset is in the state (committed rows only on a replica).
        const int64_t applied = part.state->applied_offset() + 1;
        pout.set_applied_offset(applied);
        if (p.min_offset() > applied) {  // read-your-writes: this replica has not applied it yet
          fail(ErrorCode::offset_not_available,
               "the state of " + part.topic + "-" + std::to_string(p.partition()) +
                   " covers the log below offset " + std::to_string(applied) + ", not yet " +
                   std::to_string(p.min_offset()) + ": retry");
          return 0;
        }
        // Keys go to the state a chunk at a time (one row-cache pass, one MultiGet for its
        // misses), the budget checked before each chunk and each row: keys read past the budget
        // come back truncated as the unread ones do. A chunk is sized to what the budget left
        // can take: 32 keys, fewer once the widest row read so far says they would overshoot
        // (before any row is read, rows are guessed at 4 KiB), so a small budget over large rows
        // is not read 32 rows at a time.
        constexpr size_t kMaxChunk = 32;
        constexpr size_t kFirstGuess = 4096;
        size_t widest = 0;
        uint64_t served = 0;
        std::vector<std::span<const uint8_t>> keys;
        std::vector<pkindex::LookupResult> rows;
        auto truncated = [&] {
          auto* r = pout.add_rows();
          r->set_truncated(true);
          r->set_offset(-1);
          r->set_timestamp(-1);
        };
        const int total = p.keys_size();
        for (int base = 0; base < total;) {
          if (part.served_bytes >= part.budget) {  // not read at all: the client asks again
            for (; base < total; ++base) truncated();
            break;
          }
          const size_t left = part.budget - part.served_bytes;
          const size_t chunk =
              std::min(kMaxChunk, 1 + left / std::max<size_t>(widest, kFirstGuess));
          const int end = static_cast<int>(std::min<size_t>(total, base + chunk));
          keys.clear();
          for (int i = base; i < end; ++i) {
            const std::string& key = p.keys(i);
            keys.emplace_back(reinterpret_cast<const uint8_t*>(key.data()), key.size());
          }
          if (Status st = part.state->lookup_many(keys, rows); !st.ok()) {
            pout.clear_rows();
            fail(ErrorCode::kafka_storage_error, st.message());
            return served;
          }
          base = end;
          for (auto& row : rows) {
            widest = std::max(widest, row.value.size());
            if (part.served_bytes >= part.budget) {
              truncated();
              continue;
            }
            auto* r = pout.add_rows();
            r->set_found(row.found);
            r->set_offset(row.offset);
            r->set_timestamp(row.timestamp);
            if (row.found) part.projection.apply(row.value);
            part.served_bytes += row.value.size();
            ++served;
            if (row.found) r->set_value(std::move(row.value));
          }
        }
        return served;
      });
}

}  // namespace strata::broker::handlers
