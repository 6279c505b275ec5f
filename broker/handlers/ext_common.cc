// The partition resolution and the bounded body parsing shared by the extension handlers
// (ext_common.h).
#include "broker/handlers/ext_common.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>

#include "broker/cluster/cluster_node.h"
#include "broker/net/connection.h"
#include "broker/pk/pk_tables.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/typed_row.h"

namespace strata::broker::handlers {

namespace {
using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Counts path[0] (and below it the rest of the path) in the message `in` is positioned in, up to
// its current limit. False on malformed bytes; true early once `count` passes `stop_after`.
bool count_in_message(CodedInputStream& in, std::span<const int> path, size_t& count,
                      size_t stop_after) {
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();  // the end, or a zero tag (malformed)
    const bool counted =
        WireFormatLite::GetTagFieldNumber(tag) == path[0] &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
    if (!counted) {
      if (!WireFormatLite::SkipField(&in, tag)) return false;
      continue;
    }
    uint32_t len = 0;
    if (!in.ReadVarint32(&len) || static_cast<int64_t>(len) > in.BytesUntilLimit()) return false;
    if (path.size() == 1) {
      if (++count > stop_after) return true;
      if (!in.Skip(static_cast<int>(len))) return false;
      continue;
    }
    const auto outer = in.PushLimit(static_cast<int>(len));
    if (!count_in_message(in, path.subspan(1), count, stop_after)) return false;
    if (count > stop_after) return true;
    in.PopLimit(outer);
  }
}
}  // namespace

std::optional<size_t> count_wire_fields(std::span<const uint8_t> wire, std::span<const int> path,
                                        size_t stop_after) {
  if (path.empty() || wire.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return std::nullopt;
  }
  CodedInputStream in(wire.data(), static_cast<int>(wire.size()));
  in.PushLimit(static_cast<int>(wire.size()));  // so BytesUntilLimit() holds at the top level
  size_t count = 0;
  if (!count_in_message(in, path, count, stop_after)) return std::nullopt;
  return count;
}

ExtBody parse_ext_body(protocol::Reader& body, google::protobuf::MessageLite& msg,
                       const ExtBodyLimits& limits) {
  const size_t n = body.remaining();
  const std::span<const uint8_t> wire = n > 0 ? body.read_raw(n) : std::span<const uint8_t>();
  if (n > limits.max_bytes) return ExtBody::too_large;
  if (!limits.counted_path.empty()) {
    auto count = count_wire_fields(wire, limits.counted_path, limits.max_count);
    if (!count) return ExtBody::undecodable;
    if (*count > limits.max_count) return ExtBody::too_many;
  }
  return msg.ParseFromArray(wire.data(), static_cast<int>(n)) ? ExtBody::ok : ExtBody::undecodable;
}

PkPartition resolve_pk_partition(RequestContext& ctx, const TopicEntry* topic,
                                 const std::string& name, int32_t partition, bool any_replica) {
  using protocol::ErrorCode;
  PkPartition out;
  if (ctx.svc.cluster) {  // a table partition is served by its leader (or, asked, any replica)
    // First: a broker without a replica may have no local topic at all, and should say where
    // the partition is not, as Kafka does, rather than that it does not exist.
    out.error = any_replica ? ctx.svc.cluster->replica_check(name, partition)
                            : ctx.svc.cluster->leader_check(name, partition, -1);
    if (out.error != ErrorCode::none) return out;
  }
  if (topic == nullptr || !topic->partition(partition)) {
    out.error = ErrorCode::unknown_topic_or_partition;
    return out;
  }
  auto state = ctx.svc.pk_tables.get(*topic, partition);
  if (!state.ok()) {
    // not_found: the table was deleted while this request was on its way (PkTables::drop is
    // final), which a client handles like any unknown topic.
    out.error = state.status().code() == Errc::not_found ? ErrorCode::unknown_topic_or_partition
                                                         : ErrorCode::kafka_storage_error;
    out.message = state.status().message();
  } else if (!*state) {
    out.error = ErrorCode::invalid_request;
    out.message = "topic " + name + " is not a primary-key table";
  } else {
    out.state = std::move(*state);
  }
  return out;
}

size_t response_budget(const Services& svc, int64_t requested, size_t default_bytes, size_t cap) {
  size_t want = requested > 0 ? static_cast<size_t>(requested) : default_bytes;
  want = std::min(want, cap);
  if (const int64_t bound = svc.config.queued_max_response_bytes; bound >= 0) {
    const int64_t left = bound - Connection::total_queued_response_memory();
    want = std::min(want, static_cast<size_t>(std::max<int64_t>(left, 1)));
  }
  return want;
}

RowProjection::RowProjection() = default;
RowProjection::~RowProjection() = default;

std::string RowProjection::init(const TopicEntry& topic, std::vector<std::string> columns) {
  projection_.reset();
  if (columns.empty()) return "";
  auto table = PkTables::table_config(topic);
  if (!table || !table->typed()) {
    return "column projection needs a typed table (table.value.format=json); " + topic.name +
           " is not one";
  }
  if (columns.size() > kMaxColumns) {
    return "at most " + std::to_string(kMaxColumns) + " columns per request";
  }
  std::vector<std::string> sorted = columns;
  std::sort(sorted.begin(), sorted.end());
  if (sorted.front().empty()) return "an empty column name";
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return "a column named twice";
  }
  projection_ = std::make_unique<pkindex::typed::Projection>(std::move(columns));
  return "";
}

void RowProjection::apply(std::string& row) const {
  if (projection_) row = projection_->apply(row);
}

}  // namespace strata::broker::handlers
