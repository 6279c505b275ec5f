// ReadChangelog (extension key 16003, v0; protocol/ext/read_changelog.proto): typed changes of PK
// partitions read from their logs (pkindex/changelog_decode.h), committed ones only: up to the
// last stable offset (the high watermark when no transaction is open), aborted transactions
// skipped.
// Long-polls like Fetch: with max_wait_ms > 0 and no change to return, the request waits on the
// broker's PartitionWatchers (woken by an append to any partition it reads) until a change arrives
// or the wait ends; the answer is then sent from an io thread through ctx.responder.
// Bounds (so no request, however many entries it lists, makes a huge response or read): max_bytes
// is clamped to 16 MiB per partition, and one call returns at most 64 MiB of changes and scans at
// most 64 MiB of log in all (entries past a budget return no changes with next_offset where the
// read stopped — a long run of `none` records returns early). A partition error answers at once
// (no long-poll wait), as Fetch does.
// Errors: top level INVALID_REQUEST (undecodable body, log topic, max_wait_ms outside 0..30000);
// per partition UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE, INVALID_REQUEST (bad limits),
// KAFKA_STORAGE_ERROR (unreadable or undecodable log).
#include <google/protobuf/arena.h>
#include <spdlog/spdlog.h>

#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/long_poll.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/changelog_decode.h"
#include "pkindex/column_stats.h"
#include "pkindex/table_config.h"
#include "protocol/ext/read_changelog.pb.h"
#include "protocol/wire/errors.h"
#include "storage/aborted_filter.h"
#include "storage/partition_log.h"

namespace strata::broker::handlers {

namespace {

using protocol::ErrorCode;
using Resp = strata::ext::ReadChangelogResponse;

constexpr int32_t kMaxRecords = 10000;
constexpr int32_t kMaxWaitMs = 30000;
constexpr int64_t kDefaultMaxBytes = 1 << 20;
constexpr int64_t kMaxBytesPerPartition = 16 << 20;
constexpr int64_t kMaxResponseBytes = 64 << 20;
constexpr int64_t kMaxScanBytes = 64 << 20;  // log bytes read per call, all entries together
constexpr uint32_t kReadChunk = 1u << 20;

// Kafka's code for a failed changelog read of one partition.
ErrorCode read_error(const std::string& topic,
                     const strata::ext::ReadChangelogRequest::PartitionRead& rp, const Status& st) {
  if (st.code() == Errc::out_of_range) return ErrorCode::offset_out_of_range;
  spdlog::error("read changelog {}-{}@{}: {}", topic, rp.partition(), rp.from_offset(),
                st.to_string());
  return ErrorCode::kafka_storage_error;
}

Resp::ChangeKind to_proto(pkindex::ChangeKind k) {
  switch (k) {
    case pkindex::ChangeKind::insert:
      return Resp::INSERT;
    case pkindex::ChangeKind::update:
      return Resp::UPDATE;
    case pkindex::ChangeKind::del:
      return Resp::DELETE;
    case pkindex::ChangeKind::none:
      break;
  }
  return Resp::CHANGE_KIND_UNSPECIFIED;
}

// A request's filter: the predicate and the table it reads (rows decode per its format).
struct ChangeFilter {
  const pkindex::stats::Predicate* predicate = nullptr;  // null: every change
  const pkindex::TableConfig* table = nullptr;
};

// The next log bytes a filtered read looks at: the batch holding `next` when its summary allows
// a match (one range), nothing when the summary rules it out (`next` then moves past it and the
// skip is counted), or — no summary — what an unfiltered read would take. `sums` caches the
// current segment's summaries across calls.
Result<std::vector<storage::PartitionLog::FileRange>> next_ranges(
    const storage::PartitionLog& log, const ChangeFilter& filter, int64_t& next, int64_t hw,
    std::optional<storage::SegmentSummaries>& sums, size_t& at, int64_t& scan_budget,
    Resp::PartitionChanges& out) {
  if (filter.predicate) {
    if (!sums || next >= sums->segment_end || next < sums->segment_base) {
      auto s = log.batch_summaries(next, hw);
      if (!s.ok()) return s.status();
      sums = std::move(*s);
      at = 0;
    }
    while (at < sums->entries.size() && sums->entries[at].last_offset < next) ++at;
    if (at < sums->entries.size() && sums->entries[at].base_offset <= next) {
      const storage::BatchSummary& e = sums->entries[at];
      scan_budget -= static_cast<int64_t>(storage::kSummaryEntryHeaderSize + e.payload.size());
      if (!pkindex::stats::may_match(*filter.predicate, e.payload)) {
        out.set_skipped_batches(out.skipped_batches() + 1);
        out.set_skipped_bytes(out.skipped_bytes() + e.size);
        next = e.last_offset + 1;
        return std::vector<storage::PartitionLog::FileRange>{};
      }
      return std::vector<storage::PartitionLog::FileRange>{{sums->file, e.position, e.size}};
    }
  }
  // Unsummarised: a whole chunk, or the one batch before the next summarised one.
  const bool summaries_ahead = sums && at < sums->entries.size();
  auto read = log.read(next, summaries_ahead ? 1 : kReadChunk, /*min_one=*/true, hw);
  if (!read.ok()) return read.status();
  return std::move(read->ranges);
}

// Reads one partition's changes from `from` into `out`; returns the number of changes, or an error.
// `bytes` (out) is the change bytes added; reading stops at `max_bytes` (after at least one
// change) or when `scan_budget` (in/out: log bytes this call may still read) is spent.
// Reads committed changes only, as a read_committed consumer does: below the last stable offset
// `hw` (the caller passes it), skipping the batches of aborted transactions, so the changes are
// exactly the ones the table's state applied. With a filter, only the changes that pass it.
Result<int32_t> read_changes(const storage::PartitionLog& log, int64_t from, int64_t hw,
                             int32_t max_records, int64_t max_bytes, const ChangeFilter& filter,
                             int64_t& bytes, int64_t& scan_budget, Resp::PartitionChanges& out) {
  const std::vector<storage::AbortedTxn> aborted = log.aborted_transactions(from, hw);
  std::vector<uint8_t> buf;
  std::vector<pkindex::ChangeView> changes;
  protocol::RecordReader reader;
  int64_t next = from;
  int32_t count = 0;
  bool full = false;
  std::optional<storage::SegmentSummaries> sums;
  size_t at = 0;
  while (!full && next < hw && scan_budget > 0) {
    const int64_t progress_mark = next;
    auto ranges = next_ranges(log, filter, next, hw, sums, at, scan_budget, out);
    if (!ranges.ok()) return ranges.status();
    if (next != progress_mark) continue;  // skipped by its summary
    if (ranges->empty()) break;
    for (const auto& range : *ranges) {
      if (full) break;
      buf.resize(range.size);
      scan_budget -= static_cast<int64_t>(range.size);
      auto n = range.file->read(range.position, range.size, buf.data());
      if (!n.ok()) return n.status();
      if (*n != range.size) return Status(Errc::corruption, "short read of the changelog");
      std::span<const uint8_t> rest(buf.data(), buf.size());
      while (!rest.empty() && !full) {
        const size_t size = protocol::peek_batch_size(rest);
        if (size == 0 || size > rest.size()) return Status(Errc::corruption, "torn batch in log");
        protocol::RecordBatchView batch(rest.first(size));
        rest = rest.subspan(size);
        if (batch.last_offset() < next) continue;
        if (storage::in_aborted_transaction(aborted, batch)) {
          next = batch.next_offset();
          continue;
        }
        changes.clear();
        STRATA_RETURN_IF_ERROR(pkindex::decode_changes(reader, batch, next, changes));
        for (const auto& c : changes) {
          if (count >= max_records || (count > 0 && bytes >= max_bytes)) {
            full = true;
            next = c.offset;
            break;
          }
          if (filter.predicate && !pkindex::stats::passes(*filter.predicate, c, *filter.table)) {
            out.set_filtered_changes(out.filtered_changes() + 1);
            next = c.offset + 1;
            continue;
          }
          auto* ch = out.add_changes();
          ch->set_offset(c.offset);
          ch->set_timestamp(c.timestamp);
          ch->set_kind(to_proto(c.kind));
          ch->set_key(c.key.data(), c.key.size());
          bytes += static_cast<int64_t>(c.key.size());
          if (c.before) {
            ch->set_before(c.before->data(), c.before->size());
            bytes += static_cast<int64_t>(c.before->size());
          }
          if (c.after) {
            ch->set_after(c.after->data(), c.after->size());
            bytes += static_cast<int64_t>(c.after->size());
          }
          ++count;
          next = c.offset + 1;
          if (count >= max_records) {
            full = true;
            break;
          }
        }
        if (!full) next = batch.next_offset();
      }
    }
    if (next == progress_mark && !full)
      return Status(Errc::corruption, "changelog read made no progress");
  }
  out.set_next_offset(next);
  return count;
}

// The request's filter as pkindex evaluates it; an error names what is wrong with it.
Result<pkindex::stats::Predicate> to_predicate(const strata::ext::Predicate& p, int depth) {
  using Op = pkindex::stats::Predicate::Op;
  using W = strata::ext::Predicate;
  if (depth > pkindex::stats::kMaxPredicateDepth) {
    return Status(Errc::invalid_argument, "the filter nests deeper than " +
                                              std::to_string(pkindex::stats::kMaxPredicateDepth));
  }
  pkindex::stats::Predicate out;
  switch (p.op()) {
    case W::EQ:
      out.op = Op::eq;
      break;
    case W::LT:
      out.op = Op::lt;
      break;
    case W::LE:
      out.op = Op::le;
      break;
    case W::GT:
      out.op = Op::gt;
      break;
    case W::GE:
      out.op = Op::ge;
      break;
    case W::IS_NULL:
      out.op = Op::is_null;
      break;
    case W::AND:
      out.op = Op::and_;
      break;
    case W::OR:
      out.op = Op::or_;
      break;
    default:
      return Status(Errc::invalid_argument, "a filter node has no operator");
  }
  out.column = p.column();
  if (out.op == Op::and_ || out.op == Op::or_) {
    for (const auto& q : p.operands()) {
      auto sub = to_predicate(q, depth + 1);
      if (!sub.ok()) return sub.status();
      out.operands.push_back(std::move(*sub));
    }
  } else if (out.op != Op::is_null) {
    const auto& v = p.value();
    switch (v.value_case()) {
      case strata::ext::Literal::kIntValue:
        out.literal = v.int_value();
        break;
      case strata::ext::Literal::kDoubleValue:
        out.literal = v.double_value();
        break;
      case strata::ext::Literal::kStringValue:
        out.literal = v.string_value();
        break;
      case strata::ext::Literal::kBoolValue:
        out.literal = v.bool_value();
        break;
      default:
        return Status(Errc::invalid_argument, "a comparison on " + p.column() + " has no value");
    }
  }
  return out;
}

class PendingChangelog : public LongPoll<PendingChangelog> {
 public:
  PendingChangelog(RequestContext ctx, strata::ext::ReadChangelogRequest req,
                   std::shared_ptr<const TopicEntry> topic,
                   std::optional<pkindex::stats::Predicate> predicate,
                   std::optional<pkindex::TableConfig> table)
      : LongPoll(ctx.svc, req.max_wait_ms()),
        ctx_(std::move(ctx)),
        req_(std::move(req)),
        topic_(std::move(topic)),
        predicate_(std::move(predicate)),
        table_(std::move(table)) {}

  // LongPoll: answers when there are changes, a partition failed or only skipped records were
  // read, or the wait is over.
  bool attempt(bool out_of_time, WaitOn& wait) {
    // Changes are built on an arena: no heap allocation per change.
    google::protobuf::Arena arena;
    Resp& resp = *google::protobuf::Arena::CreateMessage<Resp>(&arena);
    resp.set_topic(req_.topic());
    bool answer_now = false;
    const int32_t changes = build(resp, wait, answer_now);
    if (!(out_of_time || changes > 0 || answer_now || wait.logs.empty())) return false;
    respond_ext(ctx_, resp);
    return true;
  }

 private:
  // Returns the number of changes; `answer_now` is set when a partition failed or its read moved
  // past records without returning changes (only `none`s): waiting would re-read them.
  int32_t build(Resp& resp, WaitOn& wait, bool& answer_now) {
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
        out->clear_changes();
        out->set_next_offset(rp.from_offset());
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
      ChangeFilter filter;
      if (predicate_) filter = {&*predicate_, &*table_};
      auto n = read_changes(*log, rp.from_offset(), std::min(hw, log->last_stable_offset()),
                            rp.max_records(), max_bytes, filter, bytes, scan_budget, *out);
      response_bytes += bytes;
      if (!n.ok()) {
        fail(read_error(req_.topic(), rp, n.status()), n.status().message());
        continue;
      }
      total += *n;
      if (out->next_offset() != rp.from_offset()) answer_now = true;
    }
    return total;
  }

  RequestContext ctx_;
  strata::ext::ReadChangelogRequest req_;
  std::shared_ptr<const TopicEntry> topic_;
  std::optional<pkindex::stats::Predicate> predicate_;
  std::optional<pkindex::TableConfig> table_;  // with a predicate
};

}  // namespace

void ext_read_changelog(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::ReadChangelogRequest req;
  Resp resp;
  auto fail = [&](ErrorCode e, std::string msg) {
    set_ext_error(resp, e);
    resp.set_error_message(std::move(msg));
    respond_ext(ctx, resp);
  };
  if (!parse_ext_body(body, req)) {
    return fail(ErrorCode::invalid_request, "undecodable ReadChangelogRequest");
  }
  resp.set_topic(req.topic());
  if (req.max_wait_ms() < 0 || req.max_wait_ms() > kMaxWaitMs) {
    return fail(ErrorCode::invalid_request,
                "max_wait_ms must be within 0.." + std::to_string(kMaxWaitMs));
  }
  if (!authorize_topic(ctx, AclOperation::read, req.topic())) {
    return fail(ErrorCode::topic_authorization_failed, "Topic authorization failed.");
  }
  auto topic = ctx.svc.topics.find(req.topic());
  if (topic && !pkindex::is_pk_table(topic->configs)) {
    return fail(ErrorCode::invalid_request, "topic " + req.topic() + " is not a primary-key table");
  }
  std::optional<pkindex::stats::Predicate> predicate;
  std::optional<pkindex::TableConfig> table;
  if (req.has_filter() && topic) {
    auto t = pkindex::parse_table_config(topic->configs);
    if (!t.ok() || !t->typed()) {
      return fail(ErrorCode::invalid_request,
                  "a filter needs a typed table (table.value.format=json or confluent)");
    }
    auto p = to_predicate(req.filter(), 1);
    std::string bad = p.ok() ? pkindex::stats::check(*p) : p.status().message();
    if (!bad.empty()) return fail(ErrorCode::invalid_request, "filter: " + bad);
    predicate = std::move(*p);
    table = std::move(*t);
  }
  auto pending = std::make_shared<PendingChangelog>(ctx, std::move(req), std::move(topic),
                                                    std::move(predicate), std::move(table));
  pending->run(false);
}

}  // namespace strata::broker::handlers
