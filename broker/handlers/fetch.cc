// Fetch (1), v4-12. Whole batches from the log as file ranges (sent with sendfile), at least one
// batch even if it exceeds max_bytes, never past the high watermark — for isolation_level 1
// (read_committed) never past the last stable offset, with the aborted transactions of the range
// (storage/txn_index.h). last_stable_offset is the log's LSO (= the high watermark while no
// transaction is open). Long-polls: with fewer than min_bytes available the request waits —
// woken by an append to any partition it reads (PartitionWatchers) — until max_wait_ms.
// No fetch sessions: session id 0 is always answered (legal; clients then send full fetches).
//
// A follower's fetch (replica_id >= 0) is read up to the LOG END, since followers replicate
// beyond the high watermark, and long-polls on log-end advances. With a last fetched epoch
// (v12) the leader first checks that the follower's log is a prefix of its own and otherwise
// answers diverging_epoch with no records (cluster/replica_fetch.h). In cluster mode every fetch
// first asks ClusterNode::leader_check (not leader, fenced or unknown epoch), a follower's
// position is reported once per request (on_follower_fetch, which may move the high watermark),
// and replication is not subject to client quotas nor counted as topic bytes out. On a single
// node a replica fetch is served the same way without follower tracking.
#include "protocol/messages/fetch.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "broker/cluster/cluster_node.h"
#include "broker/cluster/replica_fetch.h"
#include "broker/cluster/replica_log.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/long_poll.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/quota/client_quotas.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {

using protocol::ErrorCode;

// Kafka's code for a failed PartitionLog::read.
ErrorCode read_error(const protocol::FetchRequest::Topic& rt,
                     const protocol::FetchRequest::Partition& rp, const Status& st) {
  if (st.code() == Errc::out_of_range) return ErrorCode::offset_out_of_range;
  spdlog::error("fetch read {}-{}@{}: {}", rt.topic, rp.partition, rp.fetch_offset, st.to_string());
  return ErrorCode::kafka_storage_error;
}

class PendingFetch : public LongPoll<PendingFetch> {
 public:
  // `denied`: the topics the principal may not read (decided on the strand, before any attempt).
  PendingFetch(RequestContext ctx, protocol::FetchRequest req, std::set<std::string> denied)
      : LongPoll(ctx.svc, ctx.responder.executor(), req.max_wait_ms),
        ctx_(std::move(ctx)),
        req_(std::move(req)),
        denied_(std::move(denied)),
        follower_(req_.replica_id >= 0),
        replication_(follower_ && ctx_.svc.cluster != nullptr) {}

  // LongPoll: answers when min_bytes are there, a partition failed, or the wait is over.
  bool attempt(bool out_of_time, WaitOn& wait) {
    protocol::FetchResponse resp;
    int64_t bytes = 0;
    bool error = false;  // or a diverging epoch: answered at once as well
    build(resp, bytes, error, wait);
    reported_ = true;  // a follower's position is reported by the first attempt only
    const bool enough = bytes >= std::max(1, req_.min_bytes) || req_.min_bytes <= 0;
    if (!(out_of_time || enough || error || wait.logs.empty() || hw_moved(wait))) return false;
    if (replication_) {  // replication is not throttled by client quotas
      count_sent(resp);
      ctx_.respond(resp);
      return true;
    }
    // consumer_byte_rate counts the response's bytes; over the quota the answer is empty and its
    // bytes are taken back out of the rate, as Kafka does (the client retries after the throttle).
    const quota::QuotaClient client = quota_client(ctx_);
    const auto size = static_cast<int64_t>(resp.size(ctx_.version));
    if (int64_t t = ctx_.svc.quotas.record_fetch(client, size); t > 0) {
      ctx_.svc.quotas.unrecord_fetch(client, size);
      protocol::FetchResponse throttled;
      throttled.session_id = resp.session_id;
      throttled.throttle_time_ms = static_cast<int32_t>(std::min<int64_t>(t, INT32_MAX));
      ctx_.respond(throttled);
      return true;
    }
    count_sent(resp);
    ctx_.respond(resp);
    return true;
  }

 private:
  // A follower's fetch is answered, data or not, once a partition's high watermark moved since
  // the request's first attempt (as Kafka's DelayedFetch does): followers learn what is
  // committed without waiting out replica.fetch.wait.max.ms — a follower's copies of what it
  // serves (the Schema Registry's, committed reads) depend on it.
  bool hw_moved(const WaitOn& wait) {
    if (!follower_) return false;
    if (first_hw_.empty()) {
      for (size_t i = 0; i < wait.logs.size(); ++i) {
        first_hw_.emplace(wait.logs[i], wait.seen_hw[i]);
      }
      return false;
    }
    // Compared with what this attempt read (the stored pointers are only looked up, never read:
    // a log may have gone with its topic since). One lookup per partition: followers fetch many.
    for (size_t i = 0; i < wait.logs.size(); ++i) {
      auto it = first_hw_.find(wait.logs[i]);
      if (it != first_hw_.end() && it->second != wait.seen_hw[i]) return true;
    }
    return false;
  }

  // bytes out per topic and per-partition error codes of the response actually sent
  // (the top-level error code is counted by respond()). Topic counters come from the entries
  // build() resolved (counters_[i] belongs to resp.responses[i]); no second registry lookup.
  void count_sent(const protocol::FetchResponse& resp) {
    auto& m = ctx_.svc.metrics;
    for (size_t i = 0; i < resp.responses.size(); ++i) {
      uint64_t bytes = 0;
      for (const auto& p : resp.responses[i].partitions) {
        if (p.error_code != ErrorCode::none) m.request_error(ctx_.api_key, p.error_code);
        bytes += p.records.size();
      }
      if (bytes != 0 && !follower_ && i < counters_.size() && counters_[i]) {
        counters_[i]->bytes_out.fetch_add(bytes, std::memory_order_relaxed);
      }
    }
    counters_.clear();
  }

  void build(protocol::FetchResponse& resp, int64_t& bytes, bool& error, WaitOn& wait) {
    resp.session_id = 0;
    counters_.clear();
    if (req_.session_id != 0) {
      // We never hand out sessions, so any non-zero id is unknown to us.
      resp.error_code = ErrorCode::fetch_session_id_not_found;
      error = true;
      return;
    }
    const int64_t max_bytes = req_.max_bytes > 0 ? req_.max_bytes : INT32_MAX;
    for (const auto& rt : req_.topics) {
      const bool denied = denied_.count(rt.topic) > 0;
      auto topic = denied ? nullptr : ctx_.svc.topics.find(rt.topic);
      counters_.push_back(topic ? topic->counters : nullptr);  // for count_sent()
      auto& tout = resp.responses.emplace_back();
      tout.topic = rt.topic;
      for (const auto& rp : rt.partitions) {
        auto& pout = tout.partitions.emplace_back();
        pout.partition_index = rp.partition;
        pout.high_watermark = -1;
        pout.last_stable_offset = -1;
        pout.log_start_offset = -1;
        pout.preferred_read_replica = -1;
        pout.records.is_null = false;
        storage::PartitionLog* log = topic ? topic->partition(rp.partition) : nullptr;
        bool diverging = false;
        pout.error_code =
            denied ? ErrorCode::topic_authorization_failed
            : log  ? read_partition(rt, rp, *log, max_bytes, pout, bytes, wait, diverging)
                   : ErrorCode::unknown_topic_or_partition;
        if (pout.error_code != ErrorCode::none || diverging) error = true;
      }
    }
  }

  // Fills one partition of the response from its log; returns its error code. `diverging`: a
  // follower's log is not a prefix of this one (answered in diverging_epoch, no records).
  ErrorCode read_partition(const protocol::FetchRequest::Topic& rt,
                           const protocol::FetchRequest::Partition& rp, storage::PartitionLog& log,
                           int64_t max_bytes, protocol::FetchResponse::Partition& pout,
                           int64_t& bytes, WaitOn& wait, bool& diverging) {
    const int64_t hw = log.high_watermark();
    const int64_t lso = log.last_stable_offset();
    pout.high_watermark = hw;
    pout.last_stable_offset = lso;
    pout.log_start_offset = log.log_start_offset();
    pout.aborted_transactions = std::vector<protocol::FetchResponse::AbortedTransaction>{};
    const int32_t asked_epoch = ctx_.version >= 9 ? rp.current_leader_epoch : -1;
    if (cluster::ClusterNode* node = ctx_.svc.cluster) {
      const ErrorCode leader = node->leader_check(rt.topic, rp.partition, asked_epoch);
      if (leader != ErrorCode::none) return leader;
    } else if (asked_epoch >= 0) {
      const int32_t epoch = log.leader_epoch();
      if (asked_epoch < epoch) return ErrorCode::fenced_leader_epoch;
      if (asked_epoch > epoch) return ErrorCode::unknown_leader_epoch;
    }
    if (rp.fetch_offset < log.log_start_offset()) return ErrorCode::offset_out_of_range;
    const int64_t end = log.log_end_offset();
    if (follower_ && rp.last_fetched_epoch >= 0) {
      auto div = cluster::diverging_epoch(
          [&log](int32_t e) { return cluster::log_end_offset_for_epoch(log, e); }, rp.fetch_offset,
          rp.last_fetched_epoch);
      // {-1, -1} (this log has no epoch history at all) cannot be told from "no divergence" on
      // the wire (a tagged field at its default is not sent): answered as no divergence, as
      // Kafka does.
      if (div && div->epoch >= 0) {
        pout.diverging_epoch.epoch = div->epoch;
        pout.diverging_epoch.end_offset = div->end_offset;
        diverging = true;
        return ErrorCode::none;
      }
    }
    if (rp.fetch_offset > end) return ErrorCode::offset_out_of_range;
    // Consumers read up to the high watermark (read_committed, v4+: the last stable offset);
    // followers replicate everything written.
    const bool committed = !follower_ && ctx_.version >= 4 && req_.isolation_level == 1;
    const int64_t bound = follower_ ? end : committed ? lso : hw;
    if (follower_) {
      wait.add_log_end(&log, hw, end);
      if (replication_ && !reported_) {
        ctx_.svc.cluster->on_follower_fetch(rt.topic, rp.partition, req_.replica_id,
                                            rp.fetch_offset, end, rp.strata_state_pending);
      }
    } else {
      wait.add(&log, hw);
    }
    const int64_t budget = std::min<int64_t>(rp.partition_max_bytes, max_bytes - bytes);
    if (rp.fetch_offset >= bound || (budget <= 0 && bytes > 0)) return ErrorCode::none;
    auto read = log.read(rp.fetch_offset, static_cast<uint32_t>(std::max<int64_t>(budget, 0)),
                         /*min_one=*/bytes == 0, bound);
    if (!read.ok()) return read_error(rt, rp, read.status());
    for (const auto& r : read->ranges) {
      protocol::RecordsPart part;
      part.owner = r.file;
      part.fd = r.file->fd();
      part.file_offset = r.position;
      part.length = r.size;
      pout.records.parts.push_back(std::move(part));
    }
    bytes += read->total_bytes;
    if (committed && read->total_bytes > 0) {
      // The aborted transactions overlapping what a read_committed consumer may read from here
      // (bounded by the LSO rather than the last fetched offset: an entry past the returned
      // batches matches none of them, so the consumer ignores it).
      for (const storage::AbortedTxn& a : log.aborted_transactions(rp.fetch_offset, lso)) {
        pout.aborted_transactions->push_back({a.producer_id, a.first_offset});
      }
    }
    return ErrorCode::none;
  }

  RequestContext ctx_;
  protocol::FetchRequest req_;
  const std::set<std::string> denied_;
  const bool follower_;     // replica_id >= 0: read up to the log end
  const bool replication_;  // a follower in cluster mode: tracked, not throttled
  bool reported_ = false;   // on_follower_fetch ran (first attempt)
  // A follower's partitions (identity only) and their high watermarks at the first attempt.
  std::unordered_map<const storage::PartitionLog*, int64_t> first_hw_;
  // counters of the topics of the response being built, one per resp.responses entry
  // (null: unknown topic); shared ownership so a concurrent DeleteTopics cannot free them.
  std::vector<std::shared_ptr<metrics::TopicCounters>> counters_;
};

}  // namespace

void fetch(RequestContext& ctx, protocol::Reader& body) {
  protocol::FetchRequest req;
  req.decode(body, ctx.version);
  const bool replication = req.replica_id >= 0 && ctx.svc.cluster != nullptr;
  if (int64_t cap = replication ? 0 : ctx.svc.quotas.fetch_window_bytes(quota_client(ctx));
      cap > 0) {
    const int64_t asked = req.max_bytes > 0 ? req.max_bytes : INT32_MAX;
    req.max_bytes = static_cast<int32_t>(std::min<int64_t>(asked, cap));
    req.min_bytes = std::min(req.min_bytes, req.max_bytes);
  }
  // Kafka: a replica's fetch needs CLUSTER_ACTION on the cluster (else every partition is
  // refused), a consumer's READ on each topic.
  std::set<std::string> denied;
  const bool follower_allowed =
      req.replica_id < 0 || authorize_cluster(ctx, AclOperation::cluster_action);
  for (const auto& t : req.topics) {
    if (!follower_allowed || (req.replica_id < 0 && !denied.count(t.topic) &&
                              !authorize_topic(ctx, AclOperation::read, t.topic))) {
      denied.insert(t.topic);
    }
  }
  auto pending = std::make_shared<PendingFetch>(ctx, std::move(req), std::move(denied));
  pending->run(false);
}

}  // namespace strata::broker::handlers
