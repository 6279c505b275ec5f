// strata-perf lookup: Lookup (extension API, protocol/ext/api_keys.h) load against a primary-key
// table. Each of
// --concurrency threads owns one blocking connection (tools/client Connection) and sends one
// request of --batch-size keys at a time, keys routed to their partitions with the table's
// partitioner (protocol/pk/partitioner.h) as a client library must.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "protocol/client/connection.h"
#include "protocol/ext/api_keys.h"
#include "protocol/ext/describe_table.pb.h"
#include "protocol/ext/lookup.pb.h"
#include "protocol/pk/partitioner.h"
#include "tools/perf/key_chooser.h"
#include "tools/perf/options.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {
namespace {

using protocol::ext::kDescribeTable;
using protocol::ext::kLookup;

struct Table {
  int32_t partitions = 0;
  protocol::pk::Partitioner partitioner = protocol::pk::Partitioner::murmur2;
};

Result<Table> describe(client::Connection& c, const LookupOptions& o) {
  strata::ext::DescribeTableRequest req;
  req.add_topics(o.table);
  strata::ext::DescribeTableResponse resp;
  STRATA_RETURN_IF_ERROR(c.call_ext(kDescribeTable, req, resp));
  if (resp.error_code() != 0 || resp.tables_size() != 1) {
    return Status(Errc::io_error, "DescribeTable: error " + std::to_string(resp.error_code()) +
                                      " " + resp.error_message());
  }
  const auto& t = resp.tables(0);
  if (t.error_code() != 0) {
    return Status(Errc::not_found, "DescribeTable " + o.table + ": error " +
                                       std::to_string(t.error_code()) + " " + t.error_message());
  }
  Table out;
  out.partitions = t.partition_count();
  out.partitioner = t.partitioner() == "crc32" ? protocol::pk::Partitioner::crc32
                                               : protocol::pk::Partitioner::murmur2;
  if (out.partitions <= 0) return Status(Errc::io_error, "DescribeTable: no partitions");
  return out;
}

struct Worker {
  Histogram latency;
  int64_t found = 0;
  int64_t keys = 0;
  int64_t requests = 0;
  int64_t value_bytes = 0;  // row bytes received (projected when --columns)
  Status status;
};

void worker_loop(const LookupOptions& o, const Table& table, const KeyChooser& chooser,
                 const std::string& host, int port, uint64_t seed, std::atomic<int64_t>& budget,
                 const std::atomic<bool>& stop, Counters& counters, Worker& w) {
  client::ConnectionOptions copts;
  copts.client_id = "strata-perf";
  auto conn = client::Connection::open(host, port, copts);
  if (!conn.ok()) {
    w.status = conn.status();
    counters.errors.fetch_add(1);
    return;
  }
  std::mt19937_64 rng(seed);
  const auto batch = static_cast<size_t>(o.batch_size);
  std::vector<int64_t> picked(batch);
  std::vector<int32_t> part_of(batch);
  std::vector<size_t> order(batch);
  std::vector<char> keys(batch * 24);
  std::vector<size_t> key_len(batch);
  strata::ext::LookupRequest req;
  strata::ext::LookupResponse resp;
  while (!stop.load(std::memory_order_relaxed)) {
    if (o.num_requests > 0 && budget.fetch_sub(1, std::memory_order_relaxed) <= 0) break;
    for (size_t i = 0; i < batch; ++i) {
      picked[i] = chooser.next(rng);
      char* k = keys.data() + i * 24;
      key_len[i] = format_key(k, picked[i]);
      part_of[i] = protocol::pk::partition_for_key(
          table.partitioner,
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(k), key_len[i]),
          table.partitions);
      order[i] = i;
    }
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return part_of[a] < part_of[b]; });
    req.Clear();
    for (const auto& c : o.columns) req.add_columns(c);
    auto* topic = req.add_topics();
    topic->set_topic(o.table);
    strata::ext::LookupRequest::PartitionKeys* pk = nullptr;
    for (size_t j = 0; j < batch; ++j) {
      const size_t i = order[j];
      if (!pk || pk->partition() != part_of[i]) {
        pk = topic->add_partitions();
        pk->set_partition(part_of[i]);
      }
      pk->add_keys(keys.data() + i * 24, key_len[i]);
    }
    const auto t0 = Clock::now();
    Status st = (*conn)->call_ext(kLookup, req, resp);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count();
    if (!st.ok()) {
      w.status = st;
      counters.errors.fetch_add(1);
      return;
    }
    if (resp.error_code() != 0) {
      w.status = Status(Errc::io_error, "Lookup: error " + std::to_string(resp.error_code()) + " " +
                                            resp.error_message());
      return;
    }
    int64_t rows = 0;
    for (const auto& t : resp.topics()) {
      for (const auto& p : t.partitions()) {
        if (p.error_code() != 0) {
          w.status = Status(Errc::io_error, "Lookup partition " + std::to_string(p.partition()) +
                                                ": error " + std::to_string(p.error_code()) + " " +
                                                p.error_message());
          return;
        }
        for (const auto& r : p.rows()) {
          ++rows;
          if (r.found()) ++w.found;
          w.value_bytes += static_cast<int64_t>(r.value().size());
        }
      }
    }
    if (rows != static_cast<int64_t>(batch)) {
      w.status = Status(Errc::io_error, "Lookup returned " + std::to_string(rows) + " rows for " +
                                            std::to_string(batch) + " keys");
      return;
    }
    w.latency.record(static_cast<uint64_t>(ns));
    w.keys += rows;
    ++w.requests;
    counters.ops.fetch_add(1, std::memory_order_relaxed);
    counters.items.fetch_add(rows, std::memory_order_relaxed);
  }
}

}  // namespace

Status run_lookup(const LookupOptions& o) {
  if (o.batch_size <= 0 || o.concurrency <= 0) {
    return Status(Errc::invalid_argument, "--batch-size and --concurrency must be > 0");
  }
  auto chooser = KeyChooser::make(o.distribution, o.keys);
  if (!chooser.ok()) return chooser.status();
  auto hp = client::parse_host_port(o.bootstrap);
  if (!hp.ok()) return hp.status();
  const std::string host = hp->first;
  const int port = hp->second;
  Table table;
  {
    auto c = client::Connection::open(host, port, client::ConnectionOptions{});
    if (!c.ok()) return c.status();
    auto t = describe(**c, o);
    if (!t.ok()) return t.status();
    table = *t;
  }
  if (o.partitions > 0) table.partitions = o.partitions;

  Counters counters;
  std::atomic<int64_t> budget{o.num_requests};
  std::atomic<bool> stop{false};
  std::vector<Worker> workers(static_cast<size_t>(o.concurrency));
  std::vector<std::thread> threads;
  Progress progress("lookup", counters, "requests", "keys");
  const auto t0 = Clock::now();
  for (size_t i = 0; i < workers.size(); ++i) {
    threads.emplace_back([&, i] {
      worker_loop(o, table, *chooser, host, port, 0x5eed0000 + i, budget, stop, counters,
                  workers[i]);
    });
  }
  if (o.num_requests <= 0) {
    while (seconds_since(t0) < o.duration_s && counters.errors.load() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    stop.store(true);
  }
  for (auto& t : threads) t.join();
  const double secs = seconds_since(t0);
  progress.stop();
  Histogram all;
  int64_t found = 0, keys = 0, requests = 0, value_bytes = 0;
  for (const auto& w : workers) {
    value_bytes += w.value_bytes;
    if (!w.status.ok()) return w.status;
    all.merge(w.latency);
    found += w.found;
    keys += w.keys;
    requests += w.requests;
  }
  if (o.expect_found && found != keys) {
    return Status(Errc::not_found, std::to_string(keys - found) + " of " + std::to_string(keys) +
                                       " keys looked up were not found");
  }
  print_summary({{"mode", "lookup"},
                 {"table", o.table},
                 {"partitions", table.partitions},
                 {"key_space", o.keys},
                 {"distribution", chooser->name()},
                 {"batch_size", o.batch_size},
                 {"concurrency", o.concurrency},
                 {"requests", requests},
                 {"keys", keys},
                 {"found", found},
                 {"columns", o.columns},
                 {"value_bytes", value_bytes},
                 {"seconds", secs},
                 {"requests_per_s", static_cast<double>(requests) / secs},
                 {"keys_per_s", static_cast<double>(keys) / secs},
                 {"latency", latency_json(all)}});
  return Status::Ok();
}

}  // namespace strata::tools::perf
