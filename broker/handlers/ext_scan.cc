// Scan (extension key 16002, v0; protocol/ext/scan.proto): all rows of one PK partition, a page
// at a time, from one pinned RocksDB snapshot (pkindex/pk_scan.h) kept in the broker's
// ScanSessions. Cursor (opaque to clients) = u8 version (2) | 16-byte random session id | i32 BE
// partition | the last returned key. A session belongs to the connection that opened it (the
// first page): its cursor on any other connection answers FETCH_SESSION_ID_NOT_FOUND, as an
// expired one does. A page re-requested with the same cursor is served again, except after the
// last page: it releases the session, so a retried last page answers FETCH_SESSION_ID_NOT_FOUND
// and the client scans again. max_bytes is clamped to 16 MiB.
// Errors: UNKNOWN_TOPIC_OR_PARTITION; INVALID_REQUEST (undecodable body, log topic, limit outside
// 1..10000, malformed cursor or one for another topic/partition); FETCH_SESSION_ID_NOT_FOUND (the
// session expired, was evicted, its state closed, the topic was deleted, it was opened on another
// connection, or the cursor is a version-1 one from an older broker run); KAFKA_STORAGE_ERROR.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/pk/pk_tables.h"
#include "broker/pk/scan_sessions.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/pk_scan.h"
#include "protocol/ext/scan.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int32_t kMaxLimit = 10000;
constexpr size_t kDefaultMaxBytes = 1u << 20;
constexpr uint8_t kCursorVersion = 2;
// Version 1 (u8 | u64 session id | i32 partition | key) named sequential 64-bit ids; its sessions
// cannot outlive the broker run that issued them, so such a cursor is answered as expired.
constexpr uint8_t kCursorVersionSequentialIds = 1;
constexpr size_t kCursorHeaderV1 = 1 + 8 + 4;
constexpr size_t kIdBytes = std::tuple_size_v<ScanSessions::SessionId>;
constexpr size_t kCursorHeader = 1 + kIdBytes + 4;

// Kafka's code for a failed PkState::scan: not_found means the snapshot is gone (the table was
// dropped meanwhile), which the client handles like an expired cursor.
ErrorCode scan_error(const strata::ext::ScanRequest& req, const Status& st) {
  if (st.code() == Errc::not_found) return ErrorCode::fetch_session_id_not_found;
  spdlog::error("scan {}-{}: {}", req.topic(), req.partition(), st.to_string());
  return ErrorCode::kafka_storage_error;
}

struct Cursor {
  bool stale = false;  // a version-1 cursor: nothing else is set
  ScanSessions::SessionId session{};
  int32_t partition = 0;
  std::string_view last_key;
};

std::string encode_cursor(const ScanSessions::SessionId& session, int32_t partition,
                          const std::string& last_key) {
  std::string c(kCursorHeader, '\0');
  c[0] = static_cast<char>(kCursorVersion);
  std::copy(session.begin(), session.end(), c.begin() + 1);
  const auto p = static_cast<uint32_t>(partition);
  for (size_t i = 0; i < 4; ++i) c[1 + kIdBytes + i] = static_cast<char>(p >> (24 - 8 * i));
  c += last_key;
  return c;
}

std::optional<Cursor> decode_cursor(const std::string& c) {
  if (c.empty()) return std::nullopt;
  const auto version = static_cast<uint8_t>(c[0]);
  if (version == kCursorVersionSequentialIds && c.size() >= kCursorHeaderV1) {
    Cursor stale;
    stale.stale = true;
    return stale;
  }
  if (c.size() < kCursorHeader || version != kCursorVersion) return std::nullopt;
  Cursor out;
  std::copy(c.begin() + 1, c.begin() + 1 + static_cast<std::ptrdiff_t>(kIdBytes),
            out.session.begin());
  uint32_t p = 0;
  for (size_t i = 0; i < 4; ++i) p = p << 8 | static_cast<uint8_t>(c[1 + kIdBytes + i]);
  out.partition = static_cast<int32_t>(p);
  out.last_key = std::string_view(c).substr(kCursorHeader);
  return out;
}

std::span<const uint8_t> as_span(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
}  // namespace

void ext_scan(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::ScanRequest req;
  strata::ext::ScanResponse resp;
  auto fail = [&](ErrorCode e, std::string msg) {
    resp.clear_rows();
    resp.clear_next_cursor();
    set_ext_error(resp, e);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  if (!parse_ext_body(body, req))
    return fail(ErrorCode::invalid_request, "undecodable ScanRequest");
  if (req.limit() < 1 || req.limit() > kMaxLimit) {
    return fail(ErrorCode::invalid_request, "limit must be within 1.." + std::to_string(kMaxLimit));
  }
  if (req.max_bytes() < 0) return fail(ErrorCode::invalid_request, "max_bytes must be >= 0");
  if (!authorize_topic(ctx, AclOperation::read, req.topic())) {
    return fail(ErrorCode::topic_authorization_failed, "Topic authorization failed.");
  }
  auto topic = ctx.svc.topics.find(req.topic());
  auto target = resolve_pk_partition(ctx, topic.get(), req.topic(), req.partition());
  if (!target.state) return fail(target.error, std::move(target.message));
  RowProjection projection;  // per page: each page names its columns
  if (std::string bad = projection.init(*topic, req.columns()); !bad.empty()) {
    return fail(ErrorCode::invalid_request, std::move(bad));
  }
  const auto& state = target.state;
  const std::string topic_id(reinterpret_cast<const char*>(topic->id.bytes.data()),
                             topic->id.bytes.size());
  ScanSessions& sessions = ctx.svc.scan_sessions;
  const int64_t now = ScanSessions::clock_ms();
  std::shared_ptr<ScanSessions::Session> session;
  std::optional<std::span<const uint8_t>> after;
  if (req.has_cursor()) {
    auto cursor = decode_cursor(req.cursor());
    if (!cursor) return fail(ErrorCode::invalid_request, "malformed cursor");
    if (cursor->stale) {
      return fail(ErrorCode::fetch_session_id_not_found,
                  "the scan expired or is unknown: start again without a cursor");
    }
    if (cursor->partition != req.partition()) {
      return fail(ErrorCode::invalid_request,
                  "the cursor belongs to partition " + std::to_string(cursor->partition));
    }
    // Bound to the opening connection: from any other one this is "not found" (see
    // scan_sessions.h).
    session = sessions.find(cursor->session, ctx.responder.connection_id(), now);
    if (session && session->principal != ctx.principal()) session = nullptr;  // re-authenticated
    if (!session) {
      return fail(ErrorCode::fetch_session_id_not_found,
                  "the scan expired or is unknown: start again without a cursor");
    }
    if (session->topic != req.topic() || session->partition != req.partition()) {
      return fail(ErrorCode::invalid_request, "the cursor belongs to another topic or partition");
    }
    if (session->topic_id != topic_id || session->state != state) {  // deleted and recreated
      sessions.close(session->id);
      return fail(ErrorCode::fetch_session_id_not_found,
                  "the scanned topic was deleted: start again without a cursor");
    }
    after = as_span(cursor->last_key);
  } else {
    auto snap = state->open_snapshot();
    if (!snap.ok()) return fail(ErrorCode::kafka_storage_error, snap.status().message());
    session = sessions.open(req.topic(), topic_id, req.partition(), state, std::move(*snap),
                            ctx.responder.connection_id(), now);
    session->principal = ctx.principal();  // only this connection's strand reaches it
  }
  // Clamped so one page stays a bounded allocation whatever the client asks for.
  const size_t max_bytes = response_budget(ctx.svc, req.max_bytes(), kDefaultMaxBytes, 16u << 20);
  auto page = session->state->scan(*session->snapshot, after, static_cast<uint32_t>(req.limit()),
                                   max_bytes);
  if (!page.ok()) {
    sessions.close(session->id);
    return fail(scan_error(req, page.status()), page.status().message());
  }
  resp.set_snapshot_offset(session->snapshot->snapshot_offset());
  for (auto& r : page->rows) {
    auto* out = resp.add_rows();
    out->set_key(std::move(r.key));
    projection.apply(r.value);
    out->set_value(std::move(r.value));
    out->set_offset(r.offset);
    out->set_timestamp(r.timestamp);
  }
  if (page->more && resp.rows_size() > 0) {
    resp.set_next_cursor(
        encode_cursor(session->id, req.partition(), resp.rows(resp.rows_size() - 1).key()));
  } else {
    sessions.close(session->id);
  }
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
