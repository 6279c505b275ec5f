// Client: primary-key table calls over the extension APIs (DescribeTable, Lookup, LookupAsOf,
// PrefixLookup, Scan, ReadChangelog; protocol/ext/*.proto). See client.h.
#include <algorithm>

#include "protocol/ext/api_keys.h"
#include "protocol/ext/describe_table.pb.h"
#include "protocol/ext/lookup.pb.h"
#include "protocol/ext/lookup_as_of.pb.h"
#include "protocol/ext/prefix_lookup.pb.h"
#include "protocol/ext/read_changelog.pb.h"
#include "protocol/ext/scan.pb.h"
#include "protocol/pk/partitioner.h"
#include "tools/client/client.h"

namespace strata::client {
namespace {

namespace api = protocol::ext;

std::string part_ctx(const std::string& topic, int32_t p) {
  return "table '" + topic + "' partition " + std::to_string(p);
}

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The broker's bounds of one Lookup request (docs/pk-tables.md): 100,000 keys and a 32 MiB body;
// the keys of one request stay under 30 MiB so that the framing fits too.
constexpr size_t kLookupMaxKeys = 100000;
constexpr size_t kLookupMaxKeyBytes = 30u << 20;

}  // namespace

Result<TableInfo> Client::describe_table(const std::string& topic) {
  auto conn = bootstrap_connection();
  if (!conn.ok()) return conn.status();
  ext::DescribeTableRequest req;
  req.add_topics(topic);
  ext::DescribeTableResponse resp;
  STRATA_RETURN_IF_ERROR((*conn)->call_ext(api::kDescribeTable, req, resp));
  if (resp.error_code() != 0) {
    return kafka_status(static_cast<int16_t>(resp.error_code()), "DescribeTable",
                        resp.error_message());
  }
  for (const auto& t : resp.tables()) {
    if (t.topic() != topic) continue;
    if (t.error_code() != 0) {
      return kafka_status(static_cast<int16_t>(t.error_code()), "table '" + topic + "'",
                          t.error_message());
    }
    TableInfo out;
    out.topic = t.topic();
    out.table_type = t.table_type();
    out.merge_engine = t.merge_engine();
    out.version_header = t.version_header();
    out.changelog_image = t.changelog_image();
    out.delete_behavior = t.delete_behavior();
    out.ttl_ms = t.ttl_ms();
    out.partitioner_name = t.partitioner();
    if (auto p = protocol::pk::parse_partitioner(out.partitioner_name)) {
      out.partitioner = *p;
    } else if (out.partitioner_name.empty()) {
      out.partitioner = protocol::pk::Partitioner::murmur2;
    } else {
      return Status(Errc::unsupported,
                    "UNSUPPORTED: table '" + topic + "' uses partitioner " + out.partitioner_name);
    }
    out.partition_count = t.partition_count();
    out.value_format = t.value_format();
    out.column_aggregations.insert(t.column_aggregations().begin(), t.column_aggregations().end());
    if (out.value_format == "confluent") {
      out.value_schema_subject = t.value_schema_subject();
      out.value_schema_id = t.value_schema_id();
      out.value_schema_type = t.value_schema_type();
      out.columns.assign(t.columns().begin(), t.columns().end());
    }
    for (const auto& p : t.partitions()) {
      TablePartition tp;
      tp.partition = p.partition();
      tp.error_code = static_cast<int16_t>(p.error_code());
      tp.applied_offset = p.applied_offset();
      tp.row_count_estimate = p.row_count_estimate();
      tp.checkpoint_offset = p.checkpoint_offset();
      tp.changelog_gap_below = p.changelog_gap_below();
      tp.high_watermark = p.high_watermark();
      out.partitions.push_back(tp);
    }
    std::sort(
        out.partitions.begin(), out.partitions.end(),
        [](const TablePartition& a, const TablePartition& b) { return a.partition < b.partition; });
    if (out.partition_count <= 0) out.partition_count = static_cast<int32_t>(out.partitions.size());
    if (out.partition_count <= 0) {
      return Status(Errc::corruption, "INVALID_REQUEST: table '" + topic + "' has no partitions");
    }
    return out;
  }
  return kafka_status(3, "table '" + topic + "'");
}

Result<std::map<Connection*, std::vector<std::pair<int32_t, size_t>>>> Client::route_keys(
    const TableInfo& table, std::span<const std::string> keys, bool follower_read) {
  // leader -> (partition, key index), in partition then request order
  std::map<Connection*, std::vector<std::pair<int32_t, size_t>>> by_leader;
  std::map<int32_t, Connection*> leaders;
  for (size_t i = 0; i < keys.size(); ++i) {
    const int32_t p = protocol::pk::partition_for_key(table.partitioner, bytes_of(keys[i]),
                                                      table.partition_count);
    auto it = leaders.find(p);
    if (it == leaders.end()) {
      auto conn = follower_read ? bootstrap_connection() : leader_connection(table.topic, p);
      if (!conn.ok()) return conn.status();
      it = leaders.emplace(p, *conn).first;
    }
    by_leader[it->second].push_back({p, i});
  }
  for (auto& [conn, todo] : by_leader) {
    std::stable_sort(todo.begin(), todo.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return by_leader;
}

namespace {

// One leader's keys of a keyed read (Lookup, LookupAsOf) in rounds: each request takes what the
// broker's request bounds allow, and the keys an answer marks truncated (its byte budget was
// reached) go into the next round, until none is left. `fill(req, partition keys, sent)` builds
// a request from the keys per partition; `take(partition answer, row, key index)` stores a row.
template <typename Req, typename Resp, typename Fill, typename Take>
Status keyed_rounds(Connection& conn, int16_t api_key, const char* api_name,
                    const std::string& topic, std::vector<std::pair<int32_t, size_t>> todo,
                    std::span<const std::string> keys, const Fill& fill, const Take& take) {
  while (!todo.empty()) {
    std::map<int32_t, std::vector<size_t>> sent;  // partition -> key indexes, request order
    size_t n = 0, bytes = 0;
    while (n < todo.size() && n < kLookupMaxKeys &&
           (n == 0 || bytes + keys[todo[n].second].size() <= kLookupMaxKeyBytes)) {
      bytes += keys[todo[n].second].size();
      sent[todo[n].first].push_back(todo[n].second);
      ++n;
    }
    Req req;
    fill(req, sent);
    Resp resp;
    STRATA_RETURN_IF_ERROR(conn.call_ext(api_key, req, resp));
    if (resp.error_code() != 0) {
      return kafka_status(static_cast<int16_t>(resp.error_code()), api_name, resp.error_message());
    }
    std::vector<std::pair<int32_t, size_t>> next;
    size_t answered = 0, served = 0;
    for (const auto& tr : resp.topics()) {
      for (const auto& pr : tr.partitions()) {
        if (pr.error_code() != 0) {
          return kafka_status(static_cast<int16_t>(pr.error_code()),
                              part_ctx(topic, pr.partition()), pr.error_message());
        }
        auto it = sent.find(pr.partition());
        if (it == sent.end() || static_cast<size_t>(pr.rows_size()) != it->second.size()) {
          return connection_status(std::string(api_name) +
                                   " response does not match the request for " +
                                   part_ctx(topic, pr.partition()));
        }
        for (int r = 0; r < pr.rows_size(); ++r) {
          const size_t i = it->second[static_cast<size_t>(r)];
          if (pr.rows(r).truncated()) {
            next.push_back({pr.partition(), i});
            continue;
          }
          take(pr, pr.rows(r), i);
          ++served;
        }
        ++answered;
      }
    }
    if (answered != sent.size()) {
      return connection_status(std::string(api_name) +
                               " response is missing partitions of table '" + topic + "'");
    }
    if (served == 0) {  // a broker serving nothing would make this loop forever
      return Status(Errc::corruption, "UNKNOWN_SERVER_ERROR: " + std::string(api_name) +
                                          " of table '" + topic +
                                          "': no progress (the broker served no key)");
    }
    next.insert(next.end(), todo.begin() + static_cast<std::ptrdiff_t>(n), todo.end());
    std::stable_sort(next.begin(), next.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    todo = std::move(next);
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<LookupRow>> Client::lookup(const TableInfo& table,
                                              std::span<const std::string> keys,
                                              const LookupOptions& options) {
  std::vector<LookupRow> out(keys.size());
  if (keys.empty()) return out;
  auto by_leader = route_keys(table, keys, options.follower_read);
  if (!by_leader.ok()) return by_leader.status();
  for (auto& [conn, todo] : *by_leader) {
    STRATA_RETURN_IF_ERROR((keyed_rounds<ext::LookupRequest, ext::LookupResponse>(
        *conn, api::kLookup, "Lookup", table.topic, std::move(todo), keys,
        [&](ext::LookupRequest& req, const std::map<int32_t, std::vector<size_t>>& sent) {
          req.set_follower_read(options.follower_read);
          for (const auto& c : options.columns) req.add_columns(c);
          auto* tk = req.add_topics();
          tk->set_topic(table.topic);
          for (const auto& [p, idx] : sent) {
            auto* pk = tk->add_partitions();
            pk->set_partition(p);
            pk->set_min_offset(options.min_offset);
            for (size_t i : idx) pk->add_keys(keys[i]);
          }
        },
        [&](const ext::LookupResponse::PartitionRows& pr, const ext::LookupResponse::Row& row,
            size_t i) {
          LookupRow& dst = out[i];
          dst.found = row.found();
          dst.value = row.value();
          dst.offset = row.offset();
          dst.timestamp = row.timestamp();
          dst.applied_offset = pr.applied_offset();
        })));
  }
  return out;
}

Result<std::vector<AsOfRow>> Client::lookup_as_of(const TableInfo& table,
                                                  std::span<const std::string> keys,
                                                  std::span<const int64_t> points,
                                                  const AsOfOptions& options) {
  if (points.size() != keys.size()) {
    return Status(Errc::invalid_argument, "one point per key");
  }
  std::vector<AsOfRow> out(keys.size());
  if (keys.empty()) return out;
  auto by_leader = route_keys(table, keys, options.follower_read);
  if (!by_leader.ok()) return by_leader.status();
  for (auto& [conn, todo] : *by_leader) {
    STRATA_RETURN_IF_ERROR((keyed_rounds<ext::LookupAsOfRequest, ext::LookupAsOfResponse>(
        *conn, api::kLookupAsOf, "LookupAsOf", table.topic, std::move(todo), keys,
        [&](ext::LookupAsOfRequest& req, const std::map<int32_t, std::vector<size_t>>& sent) {
          req.set_kind(options.by_offset ? ext::LookupAsOfRequest::OFFSET
                                         : ext::LookupAsOfRequest::TIMESTAMP);
          req.set_follower_read(options.follower_read);
          for (const auto& c : options.columns) req.add_columns(c);
          auto* tk = req.add_topics();
          tk->set_topic(table.topic);
          for (const auto& [p, idx] : sent) {
            auto* pk = tk->add_partitions();
            pk->set_partition(p);
            for (size_t i : idx) {
              auto* k = pk->add_keys();
              k->set_key(keys[i]);
              k->set_at(points[i]);
            }
          }
        },
        [&](const ext::LookupAsOfResponse::PartitionRows&, const ext::LookupAsOfResponse::Row& row,
            size_t i) {
          AsOfRow& dst = out[i];
          dst.found = row.found();
          dst.value = row.value();
          dst.offset = row.offset();
          dst.timestamp = row.timestamp();
          dst.out_of_retention = row.error_code() != 0;
          dst.earliest = row.earliest();
        })));
  }
  return out;
}

Result<std::vector<TableRow>> Client::prefix_lookup(const TableInfo& table,
                                                    const std::string& prefix, int64_t limit,
                                                    int32_t page,
                                                    const std::vector<std::string>& columns) {
  std::vector<TableRow> out;
  for (int32_t p = 0; p < table.partition_count; ++p) {
    auto conn = leader_connection(table.topic, p);
    if (!conn.ok()) return conn.status();
    std::optional<std::string> cursor;
    for (;;) {
      if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) return out;
      ext::PrefixLookupRequest req;
      req.set_topic(table.topic);
      req.set_partition(p);
      req.set_prefix(prefix);
      for (const auto& c : columns) req.add_columns(c);
      int64_t want = page;
      if (limit > 0) want = std::min<int64_t>(want, limit - static_cast<int64_t>(out.size()));
      req.set_limit(static_cast<int32_t>(want));
      if (cursor) req.set_cursor(*cursor);
      ext::PrefixLookupResponse resp;
      STRATA_RETURN_IF_ERROR((*conn)->call_ext(api::kPrefixLookup, req, resp));
      if (resp.error_code() != 0) {
        return kafka_status(static_cast<int16_t>(resp.error_code()), part_ctx(table.topic, p),
                            resp.error_message());
      }
      for (const auto& r : resp.rows()) {
        out.push_back(TableRow{p, r.key(), r.value(), r.offset(), r.timestamp()});
      }
      if (!resp.has_next_cursor()) break;
      if (cursor && resp.next_cursor() == *cursor) {  // a repeated cursor would loop forever
        return Status(Errc::corruption, "UNKNOWN_SERVER_ERROR: " + part_ctx(table.topic, p) +
                                            ": no progress (the broker repeated its cursor)");
      }
      cursor = resp.next_cursor();
    }
  }
  return out;
}

Result<ScanResult> Client::scan(const TableInfo& table, int64_t limit, int32_t page,
                                const std::vector<std::string>& columns) {
  ScanResult out;
  for (int32_t p = 0; p < table.partition_count; ++p) {
    auto conn = leader_connection(table.topic, p);
    if (!conn.ok()) return conn.status();
    std::optional<std::string> cursor;
    for (;;) {
      if (limit > 0 && static_cast<int64_t>(out.rows.size()) >= limit) return out;
      ext::ScanRequest req;
      req.set_topic(table.topic);
      req.set_partition(p);
      for (const auto& c : columns) req.add_columns(c);
      int64_t want = page;
      if (limit > 0) want = std::min<int64_t>(want, limit - static_cast<int64_t>(out.rows.size()));
      req.set_limit(static_cast<int32_t>(want));
      if (cursor) req.set_cursor(*cursor);
      ext::ScanResponse resp;
      STRATA_RETURN_IF_ERROR((*conn)->call_ext(api::kScan, req, resp));
      if (resp.error_code() != 0) {
        return kafka_status(static_cast<int16_t>(resp.error_code()), part_ctx(table.topic, p),
                            resp.error_message());
      }
      out.snapshot_offsets[p] = resp.snapshot_offset();
      for (const auto& r : resp.rows()) {
        out.rows.push_back(TableRow{p, r.key(), r.value(), r.offset(), r.timestamp()});
      }
      if (!resp.has_next_cursor()) break;
      if (cursor && resp.next_cursor() == *cursor) {  // a repeated cursor would loop forever
        return Status(Errc::corruption, "UNKNOWN_SERVER_ERROR: " + part_ctx(table.topic, p) +
                                            ": no progress (the broker repeated its cursor)");
      }
      cursor = resp.next_cursor();
    }
  }
  return out;
}

Result<ChangelogPage> Client::read_changelog(const TableInfo& table,
                                             const std::map<int32_t, int64_t>& from,
                                             int32_t max_records_per_partition, int32_t max_wait_ms,
                                             const ext::Predicate* filter) {
  ChangelogPage out;
  std::map<Connection*, std::vector<int32_t>> by_leader;
  for (const auto& [p, off] : from) {
    (void)off;
    auto conn = leader_connection(table.topic, p);
    if (!conn.ok()) return conn.status();
    by_leader[*conn].push_back(p);
  }
  for (const auto& [conn, parts] : by_leader) {
    ext::ReadChangelogRequest req;
    req.set_topic(table.topic);
    req.set_max_wait_ms(max_wait_ms);
    if (filter) *req.mutable_filter() = *filter;
    for (int32_t p : parts) {
      auto* pr = req.add_partitions();
      pr->set_partition(p);
      pr->set_from_offset(from.at(p));
      pr->set_max_records(max_records_per_partition);
    }
    ext::ReadChangelogResponse resp;
    STRATA_RETURN_IF_ERROR(conn->call_ext(api::kReadChangelog, req, resp, max_wait_ms));
    if (resp.error_code() != 0) {
      return kafka_status(static_cast<int16_t>(resp.error_code()), "ReadChangelog",
                          resp.error_message());
    }
    for (const auto& pc : resp.partitions()) {
      if (pc.error_code() != 0) {
        return kafka_status(static_cast<int16_t>(pc.error_code()),
                            part_ctx(table.topic, pc.partition()), pc.error_message());
      }
      out.next_offsets[pc.partition()] = pc.next_offset();
      out.high_watermarks[pc.partition()] = pc.high_watermark();
      out.skipped_batches += pc.skipped_batches();
      out.skipped_bytes += pc.skipped_bytes();
      out.filtered_changes += pc.filtered_changes();
      for (const auto& c : pc.changes()) {
        Change ch;
        ch.partition = pc.partition();
        ch.offset = c.offset();
        ch.timestamp = c.timestamp();
        ch.kind = static_cast<ChangeKind>(c.kind());
        ch.key = c.key();
        if (c.has_before()) ch.before = c.before();
        if (c.has_after()) ch.after = c.after();
        out.changes.push_back(std::move(ch));
      }
    }
  }
  return out;
}

}  // namespace strata::client
