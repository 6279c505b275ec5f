// The shared walk of the extension log reads (see log_read.h).
#include "broker/handlers/log_read.h"

#include <spdlog/spdlog.h>

#include <vector>

#include "broker/security/authorize.h"
#include "storage/aborted_filter.h"

namespace strata::broker::handlers::log_read {

namespace {

using protocol::ErrorCode;
constexpr uint32_t kReadChunk = 1u << 20;

// The request's filter as pkindex evaluates it; an error names what is wrong with it.
Result<pkindex::stats::Predicate> to_predicate(const strata::ext::Predicate& p, int depth,
                                               int& nodes) {
  using Op = pkindex::stats::Predicate::Op;
  using W = strata::ext::Predicate;
  if (depth > pkindex::stats::kMaxPredicateDepth) {
    return Status(Errc::invalid_argument, "the filter nests deeper than " +
                                              std::to_string(pkindex::stats::kMaxPredicateDepth));
  }
  if (++nodes > pkindex::stats::kMaxPredicateNodes) {
    return Status(Errc::invalid_argument, "the filter has more than " +
                                              std::to_string(pkindex::stats::kMaxPredicateNodes) +
                                              " nodes");
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
      auto sub = to_predicate(q, depth + 1, nodes);
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

// The next log bytes a filtered walk looks at: the batch holding `next` when its summary allows
// a match (one range), nothing when the summary rules it out (`next` then moves past it and the
// skip is counted), or — no summary — what an unfiltered read would take. `sums` caches the
// current segment's summaries across calls.
Result<std::vector<storage::PartitionLog::FileRange>> next_ranges(
    const storage::PartitionLog& log, const std::optional<Filter>& filter, int64_t& next,
    int64_t lso, std::optional<storage::SegmentSummaries>& sums, size_t& at, int64_t& scan_budget,
    Skips& skips) {
  if (filter) {
    if (!sums || next >= sums->segment_end || next < sums->segment_base) {
      auto s = log.batch_summaries(next, lso);
      if (!s.ok()) return s.status();
      sums = std::move(*s);
      at = 0;
      scan_budget -= static_cast<int64_t>(sums->file_bytes);  // loading them is log reading too
    }
    while (at < sums->entries.size() && sums->entries[at].last_offset < next) ++at;
    if (at < sums->entries.size() && sums->entries[at].base_offset <= next &&
        storage::check_batch_summary(*sums->file, sums->entries[at])) {
      const storage::BatchSummary& e = sums->entries[at];
      if (!pkindex::stats::may_match(filter->predicate, e.payload)) {
        ++skips.batches;
        skips.bytes += e.size;
        next = e.last_offset + 1;
        return std::vector<storage::PartitionLog::FileRange>{};
      }
      return std::vector<storage::PartitionLog::FileRange>{{sums->file, e.position, e.size}};
    }
  }
  // Unsummarised: a whole chunk, or the one batch before the next summarised one.
  const bool summaries_ahead = sums && at < sums->entries.size();
  auto read = log.read(next, summaries_ahead ? 1 : kReadChunk, /*min_one=*/true, lso);
  if (!read.ok()) return read.status();
  return std::move(read->ranges);
}

}  // namespace

std::shared_ptr<const pkindex::TableConfig> confluent_table(const TopicEntry& topic) {
  auto format = topic.configs.find(std::string(protocol::pk::kValueFormat));
  if (!topic.pk_table || format == topic.configs.end() || format->second != "confluent") {
    return nullptr;
  }
  return topic.table;
}

Result<std::optional<Filter>> make_filter(const TopicEntry& topic, bool has_filter,
                                          const strata::ext::Predicate& wire) {
  if (!has_filter) return std::optional<Filter>();
  const auto& t = topic.table;
  if (!t || !t->typed()) {
    return Status(Errc::invalid_argument,
                  "a filter needs a typed topic (table.value.format=json or confluent)");
  }
  int nodes = 0;
  auto p = to_predicate(wire, 1, nodes);
  if (!p.ok()) return Status(Errc::invalid_argument, "filter: " + p.status().message());
  if (std::string bad = pkindex::stats::check(*p); !bad.empty()) {
    return Status(Errc::invalid_argument, "filter: " + bad);
  }
  return std::optional<Filter>(Filter{std::move(*p), t, topic.writers});
}

Result<int64_t> walk(const storage::PartitionLog& log, int64_t from, int64_t lso,
                     const std::optional<Filter>& filter, int64_t& scan_budget, Skips& skips,
                     const BatchFn& on_batch) {
  const std::vector<storage::AbortedTxn> aborted = log.aborted_transactions(from, lso);
  std::vector<uint8_t> buf;
  std::optional<storage::SegmentSummaries> sums;
  size_t at = 0;
  int64_t next = from;
  bool full = false;
  while (!full && next < lso && scan_budget > 0) {
    const int64_t progress_mark = next;
    auto ranges = next_ranges(log, filter, next, lso, sums, at, scan_budget, skips);
    if (!ranges.ok()) return ranges.status();
    if (next != progress_mark) continue;  // skipped by its summary
    if (ranges->empty()) break;
    for (const auto& range : *ranges) {
      if (full) break;
      buf.resize(range.size);
      scan_budget -= static_cast<int64_t>(range.size);
      auto n = range.file->read(range.position, range.size, buf.data());
      if (!n.ok()) return n.status();
      if (*n != range.size) return Status(Errc::corruption, "short read of the log");
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
        auto f = on_batch(batch, next);
        if (!f.ok()) return f.status();
        full = *f;
        if (!full) next = batch.next_offset();
      }
    }
    if (next == progress_mark && !full)
      return Status(Errc::corruption, "log read made no progress");
  }
  return next;
}

ErrorCode read_error(const std::string& topic, int32_t partition, int64_t from, const Status& st) {
  if (st.code() == Errc::out_of_range) return ErrorCode::offset_out_of_range;
  spdlog::error("read of {}-{}@{}: {}", topic, partition, from, st.to_string());
  return ErrorCode::kafka_storage_error;
}

bool authorize_read(RequestContext& ctx, const std::string& topic) {
  return authorize_topic(ctx, AclOperation::read, topic);
}

}  // namespace strata::broker::handlers::log_read
