// `strata produce TOPIC` (lines from stdin) and `strata consume TOPIC`, including the
// change kinds and before-images of primary-key tables (strata.change / strata.before headers).
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "protocol/pk/change_headers.h"
#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_sigint(int) { g_stop = 1; }

struct RecordsOpts {
  std::string topic;
  std::optional<std::string> key_separator;
  std::vector<std::string> headers;
  std::optional<int32_t> partition;
  std::optional<std::string> partitioner;  // default: the table's, else murmur2
  int32_t batch = 1000;
  bool from_beginning = false;
  std::optional<int64_t> offset;
  std::optional<int64_t> timestamp;
  int64_t limit = 0;
  std::string format = "value";
  bool follow = false;
};

int do_produce(Cli& cli, const RecordsOpts& o) {
  std::vector<client::RecordHeader> headers;
  for (const auto& h : o.headers) {
    auto kv = split_kv(h);
    if (!kv.ok()) return usage_error(cli, kv.status().message());
    headers.push_back({kv->first, kv->second});
  }
  auto& c = cli.client();
  auto partitioner = protocol::pk::Partitioner::murmur2;
  if (o.partitioner) {
    if (*o.partitioner == "crc32") partitioner = protocol::pk::Partitioner::crc32;
  } else if (auto table = c.describe_table(o.topic); table.ok()) {
    partitioner = table->partitioner;  // a PK table: route keys as the broker requires
  }
  std::map<int32_t, std::tuple<int64_t, int64_t, int64_t>> per_part;  // first, last, count
  int64_t total = 0;
  Progress progress("produced");
  std::vector<client::ProduceRecord> pending;
  auto flush = [&]() -> Status {
    if (pending.empty()) return Status::Ok();
    auto r = c.produce(o.topic, pending, partitioner);
    if (!r.ok()) return r.status();
    for (const auto& [p, off] : r->placements) {
      auto it = per_part.find(p);
      if (it == per_part.end()) {
        per_part[p] = {off, off, 1};
      } else {
        std::get<0>(it->second) = std::min(std::get<0>(it->second), off);
        std::get<1>(it->second) = std::max(std::get<1>(it->second), off);
        ++std::get<2>(it->second);
      }
    }
    total += static_cast<int64_t>(pending.size());
    pending.clear();
    progress.update(total);
    return Status::Ok();
  };
  std::string line;
  size_t pending_bytes = 0;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    client::ProduceRecord rec;
    if (o.partition) rec.partition = *o.partition;
    if (o.key_separator && !o.key_separator->empty()) {
      const size_t at = line.find(*o.key_separator);
      if (at == std::string::npos) {
        rec.value = line;
      } else {
        rec.key = line.substr(0, at);
        rec.value = line.substr(at + o.key_separator->size());
      }
    } else {
      rec.value = line;
    }
    rec.headers = headers;
    pending_bytes += line.size() + 64;
    pending.push_back(std::move(rec));
    // Requests stay well below the default max.message.bytes (1 MiB) per partition batch.
    if (static_cast<int32_t>(pending.size()) >= o.batch || pending_bytes >= (512u << 10)) {
      pending_bytes = 0;
      Status st = flush();
      if (!st.ok()) return fail(cli, st);
    }
  }
  Status st = flush();
  progress.done(total);
  if (!st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    json parts = json::array();
    for (const auto& [p, v] : per_part) {
      parts.push_back({{"partition", p},
                       {"first_offset", std::get<0>(v)},
                       {"last_offset", std::get<1>(v)},
                       {"count", std::get<2>(v)}});
    }
    print_json({{"topic", o.topic}, {"count", total}, {"partitions", parts}});
  } else {
    std::cout << "produced " << total << " record(s) to " << o.topic << "\n";
  }
  return kExitOk;
}

std::optional<std::string> header_value(const client::FetchedRecord& r, std::string_view name) {
  for (const auto& h : r.headers) {
    if (h.key == name) return h.value.value_or("");
  }
  return std::nullopt;
}

void print_record(Cli& cli, const RecordsOpts& o, const client::FetchedRecord& r) {
  const auto change = header_value(r, protocol::pk::kChangeHeader);
  std::optional<std::string> before;
  for (const auto& h : r.headers) {
    if (h.key == protocol::pk::kBeforeHeader) before = h.value;
  }
  if (cli.json_out()) {
    json hs = json::array();
    for (const auto& h : r.headers) hs.push_back({{"key", h.key}, {"value", jbytes(h.value)}});
    json j{{"topic", o.topic},     {"partition", r.partition},
           {"offset", r.offset},   {"timestamp", r.timestamp},
           {"key", jbytes(r.key)}, {"value", jbytes(r.value)},
           {"headers", hs}};
    if (change) {
      j["change"] = *change;
      j["before"] = jbytes(before);
    }
    print_json(j);
    return;
  }
  if (o.format == "kv") {
    std::cout << show(r.key) << "\t" << show(r.value) << "\n";
  } else if (o.format == "full") {
    std::string hs;
    for (const auto& h : r.headers) hs += (hs.empty() ? "" : ",") + h.key + "=" + show(h.value);
    std::cout << r.partition << "\t" << r.offset << "\t" << r.timestamp << "\t" << show(r.key)
              << "\t" << show(r.value) << "\t" << (hs.empty() ? "-" : hs) << "\n";
  } else if (o.format == "change") {
    std::cout << r.partition << "\t" << r.offset << "\t" << change.value_or("-") << "\t"
              << show(r.key) << "\t" << show(before) << "\t" << show(r.value) << "\n";
  } else {
    std::cout << show(r.value) << "\n";
  }
}

int do_consume(Cli& cli, const RecordsOpts& o) {
  const int starts =
      int(o.from_beginning) + int(o.offset.has_value()) + int(o.timestamp.has_value());
  if (starts > 1) {
    return usage_error(cli, "give at most one of --from-beginning, --offset, --timestamp");
  }
  auto& c = cli.client();
  auto info = c.topic(o.topic);
  if (!info.ok()) return fail(cli, info.status());
  std::vector<int32_t> parts;
  for (const auto& p : info->partitions) {
    if (!o.partition || p.partition == *o.partition) parts.push_back(p.partition);
  }
  if (parts.empty()) {
    return fail(cli, client::kafka_status(3, "topic '" + o.topic + "' partition " +
                                                 std::to_string(o.partition.value_or(-1))));
  }
  auto lo = c.list_offsets(o.topic, client::kEarliest, parts);
  if (!lo.ok()) return fail(cli, lo.status());
  auto hi = c.list_offsets(o.topic, client::kLatest, parts);
  if (!hi.ok()) return fail(cli, hi.status());
  std::map<int32_t, int64_t> pos;
  std::map<int32_t, int64_t> end;
  for (const auto& p : *lo) pos[p.partition] = p.offset;
  for (const auto& p : *hi) end[p.partition] = p.offset;
  if (o.offset) {
    for (auto& [p, off] : pos) off = std::clamp(*o.offset, off, end[p]);
  } else if (o.timestamp) {
    auto bt = c.list_offsets(o.topic, *o.timestamp, parts);
    if (!bt.ok()) return fail(cli, bt.status());
    for (const auto& p : *bt) pos[p.partition] = p.offset >= 0 ? p.offset : end[p.partition];
  }
  std::signal(SIGINT, on_sigint);
  int64_t count = 0;
  Progress progress("consumed");
  for (;;) {
    if (g_stop || (o.limit > 0 && count >= o.limit)) break;
    std::map<int32_t, int64_t> want;
    for (int32_t p : parts) {
      if (o.follow || pos[p] < end[p]) want[p] = pos[p];
    }
    if (want.empty()) break;  // every partition reached its end offset
    // One multi-partition Fetch per round; with --follow it long-polls until any has data.
    auto r = c.fetch_partitions(o.topic, want, o.follow ? 500 : 0);
    if (!r.ok()) return fail(cli, r.status());
    bool moved = false;
    for (const auto& [p, fr] : *r) {
      for (const auto& rec : fr.records) {
        if (o.limit > 0 && count >= o.limit) break;
        if (!o.follow && rec.offset >= end[p]) {
          // Past the end seen at start-up; whatever lay in [pos, end) was compacted away.
          pos[p] = std::max(pos[p], end[p]);
          moved = true;
          break;
        }
        print_record(cli, o, rec);
        ++count;
        pos[p] = rec.offset + 1;
        moved = true;
      }
      if (fr.records.empty()) {
        if (fr.next_offset > pos[p]) {
          pos[p] = fr.next_offset;  // only control batches / compacted-away records
          moved = true;
        }
        if (!o.follow && fr.high_watermark <= pos[p]) end[p] = pos[p];
      }
    }
    progress.update(count);
    if (!moved && !o.follow) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  progress.done(count);
  std::cout.flush();
  return kExitOk;
}

}  // namespace

void register_records(CLI::App& app, Cli& cli) {
  {
    auto o = std::make_shared<RecordsOpts>();
    auto* s = app.add_subcommand("produce", "Produce lines from stdin (one record per line)");
    s->add_option("topic", o->topic)->required();
    s->add_option("--key-separator,-K", o->key_separator,
                  "Split each line at the first SEP into key and value");
    s->add_option("--header,-H", o->headers, "Header KEY=VALUE on every record (repeatable)");
    s->add_option("--partition,-p", o->partition, "Partition (default: by key / round robin)");
    s->add_option("--partitioner", o->partitioner,
                  "Key partitioner (default: a PK table's own, else murmur2)")
        ->check(CLI::IsMember({"murmur2", "crc32"}));
    s->add_option("--batch", o->batch, "Records per produce request")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    s->callback([&cli, o] { cli.action = [&cli, o] { return do_produce(cli, *o); }; });
  }
  {
    auto o = std::make_shared<RecordsOpts>();
    auto* s = app.add_subcommand("consume", "Print records (JSON lines with --output json)");
    s->add_option("topic", o->topic)->required();
    s->add_flag("--from-beginning", o->from_beginning, "Start at the log start (the default)");
    s->add_option("--offset", o->offset, "Start offset in every partition");
    s->add_option("--timestamp", o->timestamp, "Start at the first record at/after this ms time");
    s->add_option("--partition,-p", o->partition, "Only this partition");
    s->add_option("--limit,-n", o->limit, "Stop after N records (0 = no limit)")
        ->check(CLI::NonNegativeNumber);
    s->add_option("--format", o->format, "Text format")
        ->check(CLI::IsMember({"value", "kv", "full", "change"}))
        ->capture_default_str();
    s->add_flag("--follow,-f", o->follow, "Keep waiting for new records (Ctrl-C stops)");
    s->callback([&cli, o] { cli.action = [&cli, o] { return do_consume(cli, *o); }; });
  }
}

}  // namespace strata::cli
