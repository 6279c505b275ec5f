#include "broker/dispatch.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/quota/client_quotas.h"
#include "broker/services.h"
#include "protocol/ext/api_keys.h"
#include "protocol/messages/messages.h"
#include "protocol/wire/errors.h"

namespace strata::broker {

namespace p = strata::protocol;

namespace {
constexpr bool kMayBlock = true;

template <typename Req>
HandlerDef def(HandlerFn fn, bool may_block = false) {
  return HandlerDef{Req::kApiKey, Req::kMinVersion, Req::kMaxVersion, fn, may_block};
}

// An extension API: its versions come from the one key table (protocol/ext/api_keys.h).
HandlerDef ext_def(int16_t api_key, HandlerFn fn, bool may_block = false) {
  const protocol::ext::ApiInfo* api = protocol::ext::find_api(api_key);
  return HandlerDef{api_key, api->min_version, api->max_version, fn, may_block};
}
}  // namespace

const std::vector<HandlerDef>& handler_table() {
  static const std::vector<HandlerDef> table = [] {
    std::vector<HandlerDef> t = {
        def<p::ProduceRequest>(handlers::produce),
        def<p::FetchRequest>(handlers::fetch),
        def<p::ListOffsetsRequest>(handlers::list_offsets),
        def<p::MetadataRequest>(handlers::metadata),
        def<p::FindCoordinatorRequest>(handlers::find_coordinator),
        def<p::ApiVersionsRequest>(handlers::api_versions),
        def<p::CreateTopicsRequest>(handlers::create_topics, kMayBlock),
        def<p::DeleteTopicsRequest>(handlers::delete_topics, kMayBlock),
        // Admin half.
        def<p::DescribeConfigsRequest>(handlers::describe_configs, kMayBlock),
        def<p::AlterConfigsRequest>(handlers::alter_configs, kMayBlock),
        def<p::IncrementalAlterConfigsRequest>(handlers::incremental_alter_configs, kMayBlock),
        def<p::CreatePartitionsRequest>(handlers::create_partitions, kMayBlock),
        def<p::DeleteRecordsRequest>(handlers::delete_records, kMayBlock),
        def<p::DescribeClusterRequest>(handlers::describe_cluster),
        def<p::OffsetForLeaderEpochRequest>(handlers::offset_for_leader_epoch),
        def<p::ElectLeadersRequest>(handlers::elect_leaders, kMayBlock),
        def<p::AlterPartitionReassignmentsRequest>(handlers::alter_partition_reassignments,
                                                   kMayBlock),
        def<p::ListPartitionReassignmentsRequest>(handlers::list_partition_reassignments),
        // Client quotas
        def<p::DescribeClientQuotasRequest>(handlers::describe_client_quotas),
        def<p::AlterClientQuotasRequest>(handlers::alter_client_quotas, kMayBlock),
        // SCRAM credentials
        def<p::DescribeUserScramCredentialsRequest>(handlers::describe_user_scram_credentials),
        def<p::AlterUserScramCredentialsRequest>(handlers::alter_user_scram_credentials, kMayBlock),
        // Consumer groups
        def<p::JoinGroupRequest>(handlers::join_group),
        def<p::SyncGroupRequest>(handlers::sync_group),
        def<p::HeartbeatRequest>(handlers::heartbeat),
        def<p::LeaveGroupRequest>(handlers::leave_group),
        def<p::OffsetCommitRequest>(handlers::offset_commit),
        def<p::OffsetFetchRequest>(handlers::offset_fetch),
        def<p::DescribeGroupsRequest>(handlers::describe_groups),
        def<p::ListGroupsRequest>(handlers::list_groups),
        def<p::DeleteGroupsRequest>(handlers::delete_groups),
        def<p::OffsetDeleteRequest>(handlers::offset_delete),
        // SASL
        def<p::SaslHandshakeRequest>(handlers::sasl_handshake),
        def<p::SaslAuthenticateRequest>(handlers::sasl_authenticate),
        // ACL administration
        def<p::DescribeAclsRequest>(handlers::describe_acls),
        def<p::CreateAclsRequest>(handlers::create_acls, kMayBlock),
        def<p::DeleteAclsRequest>(handlers::delete_acls, kMayBlock),
        // Idempotent producer
        def<p::InitProducerIdRequest>(handlers::init_producer_id, kMayBlock),
        // Transactions
        def<p::AddPartitionsToTxnRequest>(handlers::add_partitions_to_txn),
        def<p::AddOffsetsToTxnRequest>(handlers::add_offsets_to_txn),
        def<p::EndTxnRequest>(handlers::end_txn),
        def<p::TxnOffsetCommitRequest>(handlers::txn_offset_commit),
        // Transaction administration
        def<p::ListTransactionsRequest>(handlers::list_transactions),
        def<p::DescribeTransactionsRequest>(handlers::describe_transactions),
        def<p::DescribeProducersRequest>(handlers::describe_producers),
        def<p::WriteTxnMarkersRequest>(handlers::write_txn_markers),
        // Extension APIs of primary-key tables (Protobuf bodies, protocol/ext/*.proto)
        ext_def(protocol::ext::kLookup, handlers::ext_lookup),
        ext_def(protocol::ext::kLookupAsOf, handlers::ext_lookup_as_of),
        ext_def(protocol::ext::kPrefixLookup, handlers::ext_prefix_lookup),
        ext_def(protocol::ext::kDescribeTable, handlers::ext_describe_table, kMayBlock),
        ext_def(protocol::ext::kReplicaCheckpoint, handlers::ext_replica_checkpoint),
        ext_def(protocol::ext::kEndTxnOffsets, handlers::ext_end_txn_offsets),
        ext_def(protocol::ext::kScan, handlers::ext_scan),
        ext_def(protocol::ext::kReadChangelog, handlers::ext_read_changelog),
        ext_def(protocol::ext::kReadLog, handlers::ext_read_log),
    };
    std::sort(t.begin(), t.end(), [](auto& a, auto& b) { return a.api_key < b.api_key; });
    return t;
  }();
  return table;
}

namespace {
int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

// SASL listeners: before authentication only ApiVersions, SaslHandshake and (after a v1
// handshake) SaslAuthenticate are served; anything else closes the connection, as Kafka does. A
// session past connections.max.reauth.ms is closed at its next request unless that request
// re-authenticates (KIP-368).
bool RequestDispatcher::admit(const RequestFrame& frame, const Responder& responder) {
  const Session& s = responder.session();
  const int16_t key = frame.api_key;
  const bool sasl_api =
      key == p::SaslHandshakeRequest::kApiKey ||
      (key == p::SaslAuthenticateRequest::kApiKey && s.sasl == Session::Sasl::authenticate);
  if (!s.authenticated()) {
    if (sasl_api || key == p::ApiVersionsRequest::kApiKey) return true;
    spdlog::warn("closing {}: api key {} before SASL authentication on listener {}",
                 responder.peer(), key, s.listener);
    responder.close("request before authentication");
    return false;
  }
  if (s.session_expires_ms > 0 && !sasl_api && steady_ms() >= s.session_expires_ms) {
    spdlog::info("closing {}: SASL session of {} expired (connections.max.reauth.ms)",
                 responder.peer(), s.principal);
    responder.close("SASL session expired");
    return false;
  }
  return true;
}

bool RequestDispatcher::dispatch(std::shared_ptr<RequestFrame> frame, Responder responder) {
  if (frame->raw_sasl_token) {
    svc_.metrics.request_received(frame->api_key);
    handlers::sasl_raw_token(svc_, *frame, responder);
    return true;
  }
  if (!admit(*frame, responder)) return true;
  const auto& table = handler_table();
  auto it = std::find_if(table.begin(), table.end(),
                         [&](const HandlerDef& h) { return h.api_key == frame->api_key; });
  if (it == table.end()) {
    spdlog::warn("closing {}: unknown api key {}", responder.peer(), frame->api_key);
    responder.close("unknown api key");
    return true;
  }
  auto& metrics = svc_.metrics;
  metrics.request_received(frame->api_key);
  if (frame->api_version < it->min_version || frame->api_version > it->max_version) {
    if (frame->api_key == p::ApiVersionsRequest::kApiKey && frame->api_version > it->max_version) {
      // The client retries with a version from this list; the body is always v0 (header v0).
      p::ApiVersionsResponse resp;
      resp.error_code = p::ErrorCode::unsupported_version;
      auto& k = resp.api_keys.emplace_back();
      k.api_key = it->api_key;
      k.min_version = it->min_version;
      k.max_version = it->max_version;
      metrics.request_error(it->api_key, resp.error_code);
      responder.send(encode_response(it->api_key, 0, frame->correlation_id, resp));
      return true;
    }
    metrics.request_error(frame->api_key, p::ErrorCode::unsupported_version);
    spdlog::warn("closing {}: api key {} version {} is not supported (range {}-{})",
                 responder.peer(), frame->api_key, frame->api_version, it->min_version,
                 it->max_version);
    responder.close("unsupported version");
    return true;
  }
  if (it->may_block && blocking_) {
    run_on_pool(*it, std::move(frame), std::move(responder));
    return false;
  }
  if (run(*it, frame, responder, blocking_ == nullptr)) return true;
  run_on_pool(*it, std::move(frame), std::move(responder));  // the handler asked for the pool
  return false;
}

void RequestDispatcher::run_on_pool(const HandlerDef& h, std::shared_ptr<RequestFrame> frame,
                                    Responder responder) {
  boost::asio::post(*blocking_, [this, &h, frame = std::move(frame), responder] {
    run(h, frame, responder, true);  // catches everything: the connection must hear back
    responder.handler_returned();
  });
}

bool RequestDispatcher::run(const HandlerDef& h, const std::shared_ptr<RequestFrame>& frame,
                            const Responder& responder, bool may_block) {
  auto& metrics = svc_.metrics;
  try {
    p::Reader r(frame->bytes.data(), frame->bytes.size());
    RequestContext ctx{svc_,
                       frame,
                       {},
                       frame->api_key,
                       frame->api_version,
                       responder,
                       std::string(quota::quota_user(responder.session().principal)),
                       may_block};
    ctx.header.decode(r, p::request_header_version(frame->api_key, frame->api_version));
    // request_percentage counts the handler's own time (a long-poll's wait is not handler time);
    // it throttles the client's later responses.
    const auto started = std::chrono::steady_clock::now();
    h.fn(ctx, r);
    svc_.quotas.record_request_time(quota_client(ctx),
                                    std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - started)
                                        .count());
    if (ctx.run_again_blocking) {
      if (!may_block) return false;
      // Already where it may block: a handler bug, and nothing will answer — close.
      spdlog::error("closing {}: api key {} v{} handler asked for the blocking pool on it",
                    responder.peer(), frame->api_key, frame->api_version);
      metrics.request_error(frame->api_key, p::ErrorCode::unknown_server_error);
      responder.close("internal error");
    }
  } catch (const p::DecodeError& e) {
    spdlog::warn("closing {}: malformed api key {} v{} request: {}", responder.peer(),
                 frame->api_key, frame->api_version, e.what());
    metrics.request_error(frame->api_key, p::ErrorCode::invalid_request);
    responder.close("malformed request");
  } catch (const std::exception& e) {
    // A bug, not bad input; this connection pays for it, the broker keeps serving.
    spdlog::error("closing {}: api key {} v{} handler failed: {}", responder.peer(), frame->api_key,
                  frame->api_version, e.what());
    metrics.request_error(frame->api_key, p::ErrorCode::unknown_server_error);
    responder.close("internal error");
  } catch (...) {
    spdlog::error("closing {}: api key {} v{} handler failed with a non-standard exception",
                  responder.peer(), frame->api_key, frame->api_version);
    metrics.request_error(frame->api_key, p::ErrorCode::unknown_server_error);
    responder.close("internal error");
  }
  return true;
}

int64_t request_quota_throttle(const RequestContext& ctx) {
  return ctx.svc.quotas.request_throttle(quota_client(ctx));
}

quota::QuotaClient quota_client(const RequestContext& ctx) {
  // a request without a client id counts as client id "" (no named client-id part matches it)
  return {ctx.quota_user,
          ctx.header.client_id ? std::string_view(*ctx.header.client_id) : std::string_view()};
}

// metrics hooks called by the network layer.
void RequestDispatcher::request_completed(int16_t api_key,
                                          std::chrono::steady_clock::duration elapsed) {
  svc_.metrics.request_completed(api_key, std::chrono::duration<double>(elapsed).count());
}
void RequestDispatcher::connection_opened() { svc_.metrics.connection_opened(); }
void RequestDispatcher::connection_closed() { svc_.metrics.connection_closed(); }

}  // namespace strata::broker
