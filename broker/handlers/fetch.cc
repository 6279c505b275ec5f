// Fetch (1), v4-12. Whole batches from the log as file ranges (sent with sendfile), at least one
// batch even if it exceeds max_bytes, never past the high watermark; last stable offset = high
// watermark (no transactions). Long-polls: with fewer than min_bytes available the request waits —
// woken by an append to any partition it reads (PartitionWatchers) — until max_wait_ms.
// No fetch sessions: session id 0 is always answered (legal; clients then send full fetches).
#include <spdlog/spdlog.h>

#include <chrono>
#include <mutex>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/metrics/broker_metrics.h"  // issue 6
#include "protocol/messages/fetch.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {

using protocol::ErrorCode;
namespace asio = boost::asio;

int16_t code(ErrorCode e) { return static_cast<int16_t>(e); }

class PendingFetch : public std::enable_shared_from_this<PendingFetch> {
 public:
  PendingFetch(RequestContext ctx, protocol::FetchRequest req)
      : ctx_(std::move(ctx)),
        req_(std::move(req)),
        timer_(ctx_.broker.io()),
        deadline_(std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(std::max(0, req_.max_wait_ms))) {}

  // Builds the response; sends it when it is final, else (re)arms the wait.
  void run(bool timed_out) {
    std::lock_guard lk(mu_);
    if (done_) return;
    protocol::FetchResponse resp;
    std::vector<std::shared_ptr<storage::PartitionLog>> watched;
    std::vector<int64_t> seen_hw;
    int64_t bytes = 0;
    bool error = false;
    build(resp, bytes, error, watched, seen_hw);
    const bool enough = bytes >= std::max(1, req_.min_bytes) || req_.min_bytes <= 0;
    if (timed_out || enough || error || ctx_.broker.stopping() || req_.max_wait_ms <= 0 || watched.empty() ||
        std::chrono::steady_clock::now() >= deadline_) {
      done_ = true;
      timer_.cancel();
      watch_.reset();  // an unfired watch's wake function holds this request: break the cycle
      count_sent(resp);  // issue 6
      ctx_.respond(resp);
      return;
    }
    auto self = shared_from_this();
    std::vector<const storage::PartitionLog*> logs;
    for (const auto& log : watched) logs.push_back(log.get());
    watch_ = ctx_.broker.watchers().watch_logs(logs, seen_hw, [self] {
      asio::post(self->ctx_.broker.io(), [self] { self->run(false); });
    });
    if (!timer_armed_) {
      timer_armed_ = true;
      timer_.expires_at(deadline_);
      timer_.async_wait([self](boost::system::error_code ec) {
        if (!ec) self->run(true);
      });
    }
  }

 private:
  // issue 6: bytes out per topic and per-partition error codes of the response actually sent
  // (the top-level error code is counted by respond()). Topic counters come from the entries
  // build() resolved (counters_[i] belongs to resp.responses[i]); no second registry lookup.
  void count_sent(const protocol::FetchResponse& resp) {
    auto& m = ctx_.broker.metrics();
    for (size_t i = 0; i < resp.responses.size(); ++i) {
      uint64_t bytes = 0;
      for (const auto& p : resp.responses[i].partitions) {
        if (p.error_code != 0) m.request_error(ctx_.api_key, p.error_code);
        bytes += p.records.size();
      }
      if (bytes != 0 && i < counters_.size() && counters_[i]) {
        counters_[i]->bytes_out.fetch_add(bytes, std::memory_order_relaxed);
      }
    }
    counters_.clear();
  }

  void build(protocol::FetchResponse& resp, int64_t& bytes, bool& error,
             std::vector<std::shared_ptr<storage::PartitionLog>>& watched,
             std::vector<int64_t>& seen_hw) {
    resp.session_id = 0;
    counters_.clear();  // issue 6
    if (req_.session_id != 0) {
      // We never hand out sessions, so any non-zero id is unknown to us.
      resp.error_code = code(ErrorCode::fetch_session_id_not_found);
      error = true;
      return;
    }
    const int64_t max_bytes = req_.max_bytes > 0 ? req_.max_bytes : INT32_MAX;
    for (const auto& rt : req_.topics) {
      auto topic = ctx_.broker.topics().find(rt.topic);
      counters_.push_back(topic ? topic->counters : nullptr);  // issue 6: for count_sent()
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
        if (!log) {
          pout.error_code = code(ErrorCode::unknown_topic_or_partition);
          error = true;
          continue;
        }
        const int64_t hw = log->high_watermark();
        pout.high_watermark = hw;
        pout.last_stable_offset = hw;
        pout.log_start_offset = log->log_start_offset();
        pout.aborted_transactions = std::vector<protocol::FetchResponse::AbortedTransaction>{};
        if (ctx_.version >= 9 && rp.current_leader_epoch >= 0) {
          int32_t epoch = log->leader_epoch();
          if (rp.current_leader_epoch < epoch) {
            pout.error_code = code(ErrorCode::fenced_leader_epoch);
            error = true;
            continue;
          }
          if (rp.current_leader_epoch > epoch) {
            pout.error_code = code(ErrorCode::unknown_leader_epoch);
            error = true;
            continue;
          }
        }
        if (rp.fetch_offset < log->log_start_offset() || rp.fetch_offset > log->log_end_offset()) {
          pout.error_code = code(ErrorCode::offset_out_of_range);
          error = true;
          continue;
        }
        watched.push_back(topic->partitions[rp.partition]);
        seen_hw.push_back(hw);
        const int64_t budget = std::min<int64_t>(rp.partition_max_bytes, max_bytes - bytes);
        if (rp.fetch_offset >= hw || (budget <= 0 && bytes > 0)) continue;
        auto read = log->read(rp.fetch_offset, static_cast<uint32_t>(std::max<int64_t>(budget, 0)),
                              /*min_one=*/bytes == 0, hw);
        if (!read.ok()) {
          if (read.status().code() == Errc::out_of_range) {
            pout.error_code = code(ErrorCode::offset_out_of_range);
          } else {
            spdlog::error("fetch read {}-{}@{}: {}", rt.topic, rp.partition, rp.fetch_offset,
                          read.status().to_string());
            pout.error_code = code(ErrorCode::kafka_storage_error);
          }
          error = true;
          continue;
        }
        for (const auto& r : read->ranges) {
          protocol::RecordsPart part;
          part.owner = r.file;
          part.fd = r.file->fd();
          part.file_offset = r.position;
          part.length = r.size;
          pout.records.parts.push_back(std::move(part));
        }
        bytes += read->total_bytes;
      }
    }
  }

  RequestContext ctx_;
  protocol::FetchRequest req_;
  asio::steady_timer timer_;
  std::chrono::steady_clock::time_point deadline_;
  std::mutex mu_;
  bool done_ = false;
  bool timer_armed_ = false;
  std::shared_ptr<PartitionWatchers::Watch> watch_;
  // issue 6: counters of the topics of the response being built, one per resp.responses entry
  // (null: unknown topic); shared ownership so a concurrent DeleteTopics cannot free them.
  std::vector<std::shared_ptr<metrics::TopicCounters>> counters_;
};

}  // namespace

void fetch(RequestContext& ctx, protocol::Reader& body) {
  protocol::FetchRequest req;
  req.decode(body, ctx.version);
  auto pending = std::make_shared<PendingFetch>(ctx, std::move(req));
  pending->run(false);
}

}  // namespace strata::broker::handlers
