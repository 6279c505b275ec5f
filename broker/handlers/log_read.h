// The shared shape of the extension reads over a partition's log: ReadChangelog (16003, typed
// changes of a PK table) and ReadLog (16008, records of a log topic). Both read committed data
// only (below the last stable offset, aborted transactions skipped), optionally filtered by a
// predicate over typed rows (pkindex/column_stats.h) with whole batches skipped by their column
// statistics, and long-poll like Fetch.
//
// Bounds (so no request, however many entries it lists, makes a huge response or read): max_bytes
// is clamped to 16 MiB per partition, and one call returns at most 64 MiB and scans at most
// 64 MiB of log in all (entries past a budget return nothing with next_offset where the read
// stopped). A partition error answers at once (no long-poll wait), as Fetch does.
// Errors: top level INVALID_REQUEST (undecodable body, wrong kind of topic, max_wait_ms outside
// 0..30000, a filter on an untyped topic or a malformed one); per partition
// UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE, INVALID_REQUEST (bad limits),
// KAFKA_STORAGE_ERROR (unreadable or undecodable log).
#pragma once

#include <google/protobuf/arena.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "broker/handlers/ext_common.h"
#include "broker/handlers/long_poll.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/column_stats.h"
#include "pkindex/table_config.h"
#include "protocol/ext/predicate.pb.h"
#include "protocol/record/record_batch.h"
#include "protocol/wire/errors.h"
#include "storage/partition_log.h"

namespace strata::broker::handlers::log_read {

inline constexpr int32_t kMaxRecords = 10000;
inline constexpr int32_t kMaxWaitMs = 30000;
inline constexpr int64_t kDefaultMaxBytes = 1 << 20;
inline constexpr int64_t kMaxBytesPerPartition = 16 << 20;
inline constexpr int64_t kMaxResponseBytes = 64 << 20;
inline constexpr int64_t kMaxScanBytes = 64 << 20;  // log bytes read per call, all entries
// A request body: its partitions and filter (at most 256 nodes) take a few KiB; the cap bounds
// what protobuf materialises before the handler can count (an empty filter node is 2 bytes).
inline constexpr size_t kMaxBodyBytes = 256 << 10;

// A request's filter: the predicate and the table whose rows it reads. Unset = every record.
struct Filter {
  pkindex::stats::Predicate predicate;
  std::shared_ptr<const pkindex::TableConfig> table;  // never null (the topic's, shared)
  // A confluent log topic's writers' decoder (TopicEntry::writers): its records' rows.
  std::shared_ptr<const pkindex::ConfluentDecoder> writers;
};

// The filter of a request on `topic` (nullopt without one), or the INVALID_REQUEST message.
Result<std::optional<Filter>> make_filter(const TopicEntry& topic, bool has_filter,
                                          const strata::ext::Predicate& wire);

// What a filtered walk skipped by the batches' statistics.
struct Skips {
  int64_t batches = 0;
  int64_t bytes = 0;
};

// Called per committed batch holding offsets >= `next`: reads its records from `next`, moves
// `next` past what it consumed, returns true when the caller's page is full (the walk stops with
// `next` where the page ended).
using BatchFn = std::function<Result<bool>(const protocol::RecordBatchView& batch, int64_t& next)>;

// Walks the committed batches of `log` from `from` below `lso` (the last stable offset), skipping
// those of aborted transactions and — with a filter — those whose summaries rule out every row.
// `scan_budget` (in/out) is the log bytes the call may still read. Returns the next offset.
Result<int64_t> walk(const storage::PartitionLog& log, int64_t from, int64_t lso,
                     const std::optional<Filter>& filter, int64_t& scan_budget, Skips& skips,
                     const BatchFn& on_batch);

// Kafka's code for a failed read of one partition (logged unless it is OFFSET_OUT_OF_RANGE).
protocol::ErrorCode read_error(const std::string& topic, int32_t partition, int64_t from,
                               const Status& st);

// The long-polling request over the partitions of one topic. `Read` provides:
//   using Request, Response;  (protobuf messages with the fields both reads share)
//   static Result<int32_t> read(const storage::PartitionLog&, int64_t from, int64_t lso,
//       int32_t max_records, int64_t max_bytes, const std::optional<Filter>&,
//       const pkindex::TableConfig* confluent, int64_t& bytes, int64_t& scan_budget,
//       PartitionOut& out)  -> records returned, next_offset set.
// `confluent` is the table config of a confluent table (null for any other topic): its logged
// rows are in the table schema's framing and encoding, served as JSON rows.
template <typename Read>
class Pending : public LongPoll<Pending<Read>> {
 public:
  using Request = typename Read::Request;
  using Response = typename Read::Response;
  Pending(RequestContext ctx, Request req, std::shared_ptr<const TopicEntry> topic,
          std::optional<Filter> filter, std::shared_ptr<const pkindex::TableConfig> confluent)
      : LongPoll<Pending<Read>>(ctx.svc, ctx.responder.executor(), req.max_wait_ms()),
        ctx_(std::move(ctx)),
        req_(std::move(req)),
        topic_(std::move(topic)),
        filter_(std::move(filter)),
        confluent_(std::move(confluent)) {}

  // LongPoll: answers when there are records, a partition failed or a read moved past records
  // without returning any (skipped, filtered), or the wait is over.
  bool attempt(bool out_of_time, WaitOn& wait) {
    google::protobuf::Arena arena;  // records built on an arena: no heap allocation per record
    Response& resp = *google::protobuf::Arena::CreateMessage<Response>(&arena);
    resp.set_topic(req_.topic());
    bool answer_now = false;
    const int32_t records = build(resp, wait, answer_now);
    if (!(out_of_time || records > 0 || answer_now || wait.logs.empty())) return false;
    respond_ext(ctx_, resp);
    return true;
  }

 private:
  int32_t build(Response& resp, WaitOn& wait, bool& answer_now) {
    using protocol::ErrorCode;
    int32_t total = 0;
    int64_t response_bytes = 0;
    const auto response_cap =
        static_cast<int64_t>(response_budget(ctx_.svc, 0, kMaxResponseBytes, kMaxResponseBytes));
    int64_t scan_budget = kMaxScanBytes;
    for (const auto& rp : req_.partitions()) {
      auto* out = resp.add_partitions();
      out->set_partition(rp.partition());
      out->set_next_offset(rp.from_offset());
      out->set_high_watermark(-1);
      out->set_log_start_offset(-1);
      auto fail = [&](ErrorCode e, std::string msg) {
        // Nothing read is returned; the high watermark and log start (what a client resets
        // from after OFFSET_OUT_OF_RANGE) stay.
        const int64_t hw = out->high_watermark(), start = out->log_start_offset();
        out->Clear();
        out->set_partition(rp.partition());
        out->set_next_offset(rp.from_offset());
        out->set_high_watermark(hw);
        out->set_log_start_offset(start);
        set_ext_error(*out, e);
        out->set_error_message(std::move(msg));
        answer_now = true;
      };
      storage::PartitionLog* log = topic_ ? topic_->partition(rp.partition()) : nullptr;
      if (!log) {
        fail(ErrorCode::unknown_topic_or_partition, "");
        continue;
      }
      const int64_t hw = log->high_watermark();
      out->set_high_watermark(hw);
      out->set_log_start_offset(log->log_start_offset());
      if (rp.max_records() < 1 || rp.max_records() > kMaxRecords) {
        fail(ErrorCode::invalid_request,
             "max_records must be within 1.." + std::to_string(kMaxRecords));
        continue;
      }
      if (rp.max_bytes() < 0) {
        fail(ErrorCode::invalid_request, "max_bytes must be >= 0");
        continue;
      }
      if (rp.from_offset() < log->log_start_offset() || rp.from_offset() > hw) {
        fail(ErrorCode::offset_out_of_range, "from_offset must be within " +
                                                 std::to_string(log->log_start_offset()) + ".." +
                                                 std::to_string(hw));
        continue;
      }
      wait.add(log, hw);
      if (response_bytes >= response_cap || scan_budget <= 0) continue;  // budget spent
      const int64_t max_bytes =
          std::min(rp.max_bytes() > 0 ? rp.max_bytes() : kDefaultMaxBytes,
                   std::min(kMaxBytesPerPartition, response_cap - response_bytes));
      int64_t bytes = 0;
      auto n = Read::read(*log, rp.from_offset(), std::min(hw, log->last_stable_offset()),
                          rp.max_records(), max_bytes, filter_, confluent_.get(), bytes,
                          scan_budget, *out);
      response_bytes += bytes;
      if (!n.ok()) {
        const Status st = n.status();
        fail(read_error(req_.topic(), rp.partition(), rp.from_offset(), st), st.message());
        continue;
      }
      total += *n;
      if (out->next_offset() != rp.from_offset()) answer_now = true;
    }
    return total;
  }

  RequestContext ctx_;
  Request req_;
  std::shared_ptr<const TopicEntry> topic_;
  std::optional<Filter> filter_;
  std::shared_ptr<const pkindex::TableConfig> confluent_;
};

// The table config of a confluent table (null for any other topic).
std::shared_ptr<const pkindex::TableConfig> confluent_table(const TopicEntry& topic);

// authorize_topic(ctx, Read, topic), kept out of this header's includes.
bool authorize_read(RequestContext& ctx, const std::string& topic);

// Parses, checks and starts a read: `kind_error(topic)` empty when the topic is of the kind the
// read serves, else the INVALID_REQUEST message.
template <typename Read>
void start(RequestContext& ctx, protocol::Reader& body, const char* name,
           const std::function<std::string(const TopicEntry&)>& kind_error) {
  using protocol::ErrorCode;
  typename Read::Request req;
  typename Read::Response resp;
  auto fail = [&](ErrorCode e, std::string msg) {
    set_ext_error(resp, e);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  switch (parse_ext_body(body, req, ExtBodyLimits{kMaxBodyBytes, {}, 0})) {
    case ExtBody::ok:
      break;
    case ExtBody::too_large:
      return fail(ErrorCode::invalid_request, std::string("a ") + name + "Request is at most " +
                                                  std::to_string(kMaxBodyBytes) + " bytes");
    default:
      return fail(ErrorCode::invalid_request, std::string("undecodable ") + name + "Request");
  }
  resp.set_topic(req.topic());
  if (req.max_wait_ms() < 0 || req.max_wait_ms() > kMaxWaitMs) {
    return fail(ErrorCode::invalid_request,
                "max_wait_ms must be within 0.." + std::to_string(kMaxWaitMs));
  }
  if (!authorize_read(ctx, req.topic())) {
    return fail(ErrorCode::topic_authorization_failed, "Topic authorization failed.");
  }
  auto topic = ctx.svc.topics.find(req.topic());
  std::optional<Filter> filter;
  std::shared_ptr<const pkindex::TableConfig> confluent;
  if (topic) {
    if (std::string e = kind_error(*topic); !e.empty()) {
      return fail(ErrorCode::invalid_request, std::move(e));
    }
    auto f = make_filter(*topic, req.has_filter(), req.filter());
    if (!f.ok()) return fail(ErrorCode::invalid_request, f.status().message());
    filter = std::move(*f);
    confluent = confluent_table(*topic);
  }
  auto pending = std::make_shared<Pending<Read>>(ctx, std::move(req), std::move(topic),
                                                 std::move(filter), std::move(confluent));
  pending->run(false);
}

}  // namespace strata::broker::handlers::log_read
