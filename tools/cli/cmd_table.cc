// `strata table ...`: primary-key tables: create, put, delete, get, as-of, scan, changelog,
// describe. Keys are routed with the table's partitioner read from DescribeTable.
#include <charconv>
#include <csignal>
#include <fstream>
#include <iostream>

#include "tools/cli/cli_common.h"
#include "tools/client/where.h"

namespace strata::cli {
namespace {

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

struct TableOpts {
  std::string name;
  int32_t partitions = 1;
  std::vector<std::string> configs;
  std::string key;
  std::string value;
  std::vector<std::string> keys;
  std::optional<std::string> prefix;
  int64_t limit = 0;
  std::optional<int64_t> from;
  bool follow = false;
  bool follower_read = false;        // get: any replica answers
  int64_t min_offset = 0;            // get: read-your-writes token
  std::vector<std::string> columns;  // get, scan: typed tables' projection
  std::optional<int64_t> at;         // as-of: a time (ms)
  std::optional<int64_t> at_offset;  // as-of: a log offset
  std::string events;                // as-of: a file of "key<TAB>point" lines (- = stdin)
  std::string events_topic;          // as-of: a log topic of events (key, record timestamp)
  bool event_offsets = false;        // as-of --events: the points are offsets
  std::string where;                 // changelog: only the changes whose row matches
};

json table_json(const client::TableInfo& t) {
  json parts = json::array();
  for (const auto& p : t.partitions) {
    parts.push_back({{"partition", p.partition},
                     {"error_code", p.error_code},
                     {"applied_offset", p.applied_offset},
                     {"row_count_estimate", p.row_count_estimate},
                     {"checkpoint_offset", p.checkpoint_offset},
                     {"changelog_gap_below", p.changelog_gap_below},
                     {"high_watermark", p.high_watermark}});
  }
  return json{{"topic", t.topic},
              {"table_type", t.table_type},
              {"merge_engine", t.merge_engine},
              {"version_header", t.version_header},
              {"changelog_image", t.changelog_image},
              {"delete_behavior", t.delete_behavior},
              {"ttl_ms", t.ttl_ms},
              {"partitioner", t.partitioner_name},
              {"partition_count", t.partition_count},
              {"value_format", t.value_format},
              {"column_aggregations", t.column_aggregations},
              {"value_schema_subject", t.value_schema_subject},
              {"value_schema_id", t.value_schema_id},
              {"value_schema_type", t.value_schema_type},
              {"columns", t.columns},
              {"partitions", parts}};
}

int do_create(Cli& cli, const TableOpts& o) {
  auto cfg = parse_kvs(o.configs);
  if (!cfg.ok()) return usage_error(cli, cfg.status().message());
  client::TopicSpec spec;
  spec.name = o.name;
  spec.partitions = o.partitions;
  spec.configs = *cfg;
  spec.configs["table.type"] = "primary-key";
  auto r = cli.client().create_topic(spec);
  if (!r.ok()) return fail(cli, r.status());
  if (cli.json_out()) {
    json c = json::object();
    for (const auto& [k, v] : spec.configs) c[k] = v;
    print_json({{"topic", r->name},
                {"topic_id", r->topic_id},
                {"partitions", r->partitions},
                {"configs", c}});
  } else {
    std::cout << "created table " << r->name << " (" << r->partitions << " partitions)\n";
  }
  return kExitOk;
}

int do_write(Cli& cli, const TableOpts& o, bool is_delete) {
  auto t = cli.client().describe_table(o.name);
  if (!t.ok()) return fail(cli, t.status());
  client::ProduceRecord rec;
  rec.key = o.key;
  if (!is_delete) rec.value = o.value;
  auto r =
      cli.client().produce(o.name, std::span<const client::ProduceRecord>(&rec, 1), t->partitioner);
  if (!r.ok()) return fail(cli, r.status());
  const auto [partition, offset] = r->placements.front();
  if (cli.json_out()) {
    print_json({{"topic", o.name},
                {"key", o.key},
                {"deleted", is_delete},
                {"partition", partition},
                {"offset", offset}});
  } else {
    std::cout << (is_delete ? "deleted " : "put ") << o.key << " (partition " << partition
              << ", offset " << offset << ")\n";
  }
  return kExitOk;
}

int do_get(Cli& cli, const TableOpts& o) {
  auto t = cli.client().describe_table(o.name);
  if (!t.ok()) return fail(cli, t.status());
  client::LookupOptions lo;
  lo.follower_read = o.follower_read;
  lo.min_offset = o.min_offset;
  lo.columns = o.columns;
  auto rows = cli.client().lookup(*t, o.keys, lo);
  if (!rows.ok()) return fail(cli, rows.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (size_t i = 0; i < o.keys.size(); ++i) {
      const auto& r = (*rows)[i];
      arr.push_back({{"key", o.keys[i]},
                     {"found", r.found},
                     {"value", r.found ? json(r.value) : json(nullptr)},
                     {"offset", r.offset},
                     {"timestamp", r.timestamp},
                     {"applied_offset", r.applied_offset}});
    }
    print_json({{"topic", o.name}, {"rows", arr}});
  } else {
    for (size_t i = 0; i < o.keys.size(); ++i) {
      const auto& r = (*rows)[i];
      std::cout << o.keys[i] << "\t" << (r.found ? r.value : "(absent)") << "\n";
    }
  }
  return kExitOk;
}

// Reads "key<TAB>point" lines (point: ms, or an offset with --offset) for as-of --events.
Status read_events(const std::string& path, std::vector<std::string>& keys,
                   std::vector<int64_t>& points) {
  std::ifstream file;
  if (path != "-") {
    file.open(path);
    if (!file) return Status(Errc::not_found, "cannot read " + path);
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    const size_t tab = line.rfind('\t');
    int64_t point = 0;
    const char* end = line.data() + line.size();
    auto [p, ec] = tab == std::string::npos ? std::from_chars(end, end, point)
                                            : std::from_chars(line.data() + tab + 1, end, point);
    if (tab == std::string::npos || ec != std::errc() || p != end) {
      return Status(Errc::invalid_argument,
                    path + " line " + std::to_string(n) + ": want KEY<TAB>POINT (an integer)");
    }
    keys.push_back(line.substr(0, tab));
    points.push_back(point);
  }
  return Status::Ok();
}

// Events of a log topic for a training set: every partition's records from its log start to the
// end the topic had when the read began (events appended meanwhile are left for the next run),
// fetched in order, keyed records only; each event's point is its record timestamp.
class TopicEvents {
 public:
  TopicEvents(client::Client& c, std::string topic) : c_(c), topic_(std::move(topic)) {}

  Status start() {
    auto first = c_.list_offsets(topic_, client::kEarliest);
    if (!first.ok()) return first.status();
    auto last = c_.list_offsets(topic_, client::kLatest);
    if (!last.ok()) return last.status();
    for (const auto& p : *first) ranges_[p.partition].first = p.offset;
    for (const auto& p : *last) ranges_[p.partition].second = p.offset;
    it_ = ranges_.begin();
    return Status::Ok();
  }

  // Appends at least one fetch's events (fewer at the end) to `out`; false when none are left.
  Result<bool> next(std::vector<client::FetchedRecord>& out) {
    while (it_ != ranges_.end()) {
      auto& [partition, range] = *it_;
      if (range.first >= range.second) {
        ++it_;
        continue;
      }
      auto got = c_.fetch(topic_, partition, range.first, 0);
      if (!got.ok()) return got.status();
      // Past the end's offset already (aborted or compacted records): nothing more to read here.
      if (got->next_offset <= range.first) {
        range.first = range.second;
        continue;
      }
      for (auto& r : got->records) {
        if (r.offset < range.first || r.offset >= range.second) continue;
        if (!r.key) {
          ++keyless_;
          continue;
        }
        out.push_back(std::move(r));
      }
      range.first = got->next_offset;
      return true;
    }
    return false;
  }

  uint64_t keyless() const { return keyless_; }

 private:
  client::Client& c_;
  std::string topic_;
  std::map<int32_t, std::pair<int64_t, int64_t>> ranges_;  // partition -> [next, end)
  std::map<int32_t, std::pair<int64_t, int64_t>>::iterator it_;
  uint64_t keyless_ = 0;
};

// One JSON line of a training set (bytes that are not UTF-8 replaced, as print_json does).
std::string json_line(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

int do_as_of(Cli& cli, const TableOpts& o) {
  const int ways = (o.at ? 1 : 0) + (o.at_offset ? 1 : 0) + (o.events.empty() ? 0 : 1) +
                   (o.events_topic.empty() ? 0 : 1);
  if (ways != 1) {
    return usage_error(cli,
                       "give one point: --at MS or --offset OFFSET, or --events FILE, or "
                       "--topic EVENTS");
  }
  const bool training = !o.events.empty() || !o.events_topic.empty();
  if (o.event_offsets && o.events.empty()) {
    return usage_error(cli, "--event-offsets goes with --events FILE");
  }
  std::vector<std::string> keys = o.keys;
  std::vector<int64_t> points(keys.size(), o.at ? *o.at : o.at_offset.value_or(0));
  if (training && !keys.empty()) return usage_error(cli, "a training set takes its keys from it");
  if (!o.events.empty()) {
    if (Status st = read_events(o.events, keys, points); !st.ok()) {
      return usage_error(cli, st.message());
    }
  } else if (!training && keys.empty()) {
    return usage_error(cli, "name keys, or --events FILE, or --topic EVENTS");
  }
  auto t = cli.client().describe_table(o.name);
  if (!t.ok()) return fail(cli, t.status());
  client::AsOfOptions ao;
  ao.by_offset = o.at_offset.has_value() || o.event_offsets;
  ao.columns = o.columns;
  // Answers `keys` at `points`; `events` (from a topic) say where each event came from.
  auto answer = [&](const std::vector<std::string>& keys, const std::vector<int64_t>& points,
                    const std::vector<client::FetchedRecord>* events) -> Result<std::vector<json>> {
    auto rows = cli.client().lookup_as_of(*t, keys, points, ao);
    if (!rows.ok()) return rows.status();
    std::vector<json> out;
    out.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      const auto& r = (*rows)[i];
      json j{{"key", keys[i]}, {"at", points[i]}};
      if (events) {
        const auto& e = (*events)[i];
        j["event"] = {{"partition", e.partition},
                      {"offset", e.offset},
                      {"value", e.value ? json(*e.value) : json(nullptr)}};
      }
      if (r.out_of_retention) {
        j["error"] = "OFFSET_OUT_OF_RANGE";
        j["earliest"] = r.earliest;
      } else {
        j["found"] = r.found;
        j["value"] = r.found ? json(r.value) : json(nullptr);
        j["offset"] = r.offset;
        j["timestamp"] = r.timestamp;
      }
      out.push_back(std::move(j));
    }
    return out;
  };
  if (!o.events_topic.empty()) {  // a training set streamed from a topic, one JSON line per event
    TopicEvents source(cli.client(), o.events_topic);
    if (Status st = source.start(); !st.ok()) return fail(cli, st);
    constexpr size_t kChunk = 10000;  // events per round of lookups: bounded memory per step
    std::vector<client::FetchedRecord> events;
    for (bool more = true; more;) {
      auto got = source.next(events);
      if (!got.ok()) return fail(cli, got.status());
      more = *got;
      if (events.empty() || (more && events.size() < kChunk)) continue;
      std::vector<std::string> ks;
      std::vector<int64_t> ps;
      for (const auto& e : events) {
        ks.push_back(*e.key);
        ps.push_back(e.timestamp);
      }
      auto lines = answer(ks, ps, &events);
      if (!lines.ok()) return fail(cli, lines.status());
      for (const auto& j : *lines) std::cout << json_line(j) << "\n";
      events.clear();
    }
    if (source.keyless() > 0) {
      std::cerr << source.keyless() << " events without a key skipped\n";
    }
    return kExitOk;
  }
  auto lines = answer(keys, points, nullptr);
  if (!lines.ok()) return fail(cli, lines.status());
  if (training) {  // a training set: one JSON line per event
    for (const auto& j : *lines) std::cout << json_line(j) << "\n";
  } else if (cli.json_out()) {
    print_json({{"topic", o.name}, {"rows", *lines}});
  } else {
    for (const auto& j : *lines) {
      std::cout << j["key"].get<std::string>() << "\t"
                << (j.contains("error") ? "(not covered; earliest " + j["earliest"].dump() + ")"
                    : j["found"].get<bool>() ? j["value"].get<std::string>()
                                             : std::string("(absent)"))
                << "\n";
    }
  }
  return kExitOk;
}

int do_scan(Cli& cli, const TableOpts& o) {
  auto t = cli.client().describe_table(o.name);
  if (!t.ok()) return fail(cli, t.status());
  std::vector<client::TableRow> rows;
  std::map<int32_t, int64_t> snapshots;
  if (o.prefix) {
    auto r = cli.client().prefix_lookup(*t, *o.prefix, o.limit, 1000, o.columns);
    if (!r.ok()) return fail(cli, r.status());
    rows = std::move(*r);
  } else {
    auto r = cli.client().scan(*t, o.limit, 1000, o.columns);
    if (!r.ok()) return fail(cli, r.status());
    rows = std::move(r->rows);
    snapshots = std::move(r->snapshot_offsets);
  }
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& r : rows) {
      arr.push_back({{"key", r.key},
                     {"value", r.value},
                     {"partition", r.partition},
                     {"offset", r.offset},
                     {"timestamp", r.timestamp}});
    }
    json snaps = json::object();
    for (const auto& [p, x] : snapshots) snaps[std::to_string(p)] = x;
    json out{{"topic", o.name}, {"rows", arr}, {"count", rows.size()}};
    if (!o.prefix) out["snapshot_offsets"] = snaps;
    print_json(out);
  } else {
    for (const auto& r : rows) std::cout << r.key << "\t" << r.value << "\n";
  }
  return kExitOk;
}

json change_json(const std::string& topic, const client::Change& c) {
  return json{{"topic", topic},
              {"partition", c.partition},
              {"offset", c.offset},
              {"timestamp", c.timestamp},
              {"kind", client::change_kind_name(c.kind)},
              {"key", c.key},
              {"before", jbytes(c.before)},
              {"after", jbytes(c.after)}};
}

int do_changelog(Cli& cli, const TableOpts& o) {
  std::optional<ext::Predicate> filter;
  if (!o.where.empty()) {
    auto p = client::parse_where(o.where);
    if (!p.ok()) return fail(cli, p.status());
    filter = std::move(*p);
  }
  auto t = cli.client().describe_table(o.name);
  if (!t.ok()) return fail(cli, t.status());
  std::map<int32_t, int64_t> from;
  for (int32_t p = 0; p < t->partition_count; ++p) {
    int64_t start = 0;
    int64_t hw = -1;
    for (const auto& tp : t->partitions) {
      if (tp.partition == p) {
        start = tp.changelog_gap_below;
        hw = tp.high_watermark;
      }
    }
    // An explicit --from is clamped into [log start, high watermark] of each partition (their
    // sizes differ), so one offset works for the whole table.
    from[p] = o.from ? std::max(start, hw >= 0 ? std::min(*o.from, hw) : *o.from) : start;
  }
  std::signal(SIGINT, on_sigint);
  int64_t printed = 0;
  json collected = json::array();
  Progress progress("changes");
  for (;;) {
    if (g_interrupted) break;
    const int32_t per_part =
        static_cast<int32_t>(o.limit > 0 ? std::min<int64_t>(1000, o.limit - printed) : 1000);
    auto page = cli.client().read_changelog(*t, from, per_part, o.follow ? 1000 : 0,
                                            filter ? &*filter : nullptr);
    if (!page.ok()) return fail(cli, page.status());
    bool done = o.limit > 0 && printed >= o.limit;
    // Per partition: changes in this page and how many of them were printed, plus the offset of
    // the last one printed, so a page cut short by --limit resumes right after it.
    std::map<int32_t, std::pair<int64_t, int64_t>> seen;  // partition -> (in page, printed)
    std::map<int32_t, int64_t> last_printed;
    for (const auto& c : page->changes) ++seen[c.partition].first;
    for (const client::Change& c : page->changes) {
      if (o.limit > 0 && printed >= o.limit) {
        done = true;
        break;
      }
      ++printed;
      ++seen[c.partition].second;
      last_printed[c.partition] = c.offset;
      if (cli.json_out()) {
        if (o.follow) {
          print_json(change_json(o.name, c));
        } else {
          collected.push_back(change_json(o.name, c));
        }
      } else {
        std::cout << c.partition << "\t" << c.offset << "\t" << client::change_kind_name(c.kind)
                  << "\t" << c.key << "\t" << show(c.before) << "\t" << show(c.after) << "\n";
        if (o.follow) std::cout.flush();
      }
    }
    if (!o.follow) progress.update(printed);
    const std::map<int32_t, int64_t> before = from;
    for (const auto& [p, next] : page->next_offsets) {
      const auto counts = seen[p];
      if (counts.second == counts.first) {
        from[p] = next;  // the partition's whole page was printed
      } else if (counts.second > 0) {
        from[p] = last_printed[p] + 1;
      }  // else nothing of it printed: stays where it was
    }
    if (done || (o.limit > 0 && printed >= o.limit)) break;
    if (!o.follow) {
      bool caught_up = true;
      for (const auto& [p, hw] : page->high_watermarks) {
        if (from[p] < hw) caught_up = false;
      }
      // Changes below the high watermark that are not committed yet (an open transaction holds
      // the last stable offset back) are not served: stop where the committed ones end.
      if (caught_up || (page->changes.empty() && from == before)) break;
    }
  }
  progress.done(printed);
  if (cli.json_out() && !o.follow) {
    json next = json::object();
    for (const auto& [p, off] : from) next[std::to_string(p)] = off;
    print_json({{"topic", o.name}, {"changes", collected}, {"next_offsets", next}});
  }
  return kExitOk;
}

int do_describe(Cli& cli, const TableOpts& o) {
  auto t = cli.client().describe_table(o.name);
  if (!t.ok()) return fail(cli, t.status());
  if (cli.json_out()) {
    print_json(table_json(*t));
    return kExitOk;
  }
  std::cout << "table " << t->topic << ": type=" << t->table_type
            << " merge-engine=" << t->merge_engine
            << (t->version_header.empty() ? "" : " version-header=" + t->version_header)
            << " changelog-image=" << t->changelog_image
            << " delete-behavior=" << t->delete_behavior << " ttl-ms=" << t->ttl_ms
            << " partitioner=" << t->partitioner_name << " partitions=" << t->partition_count
            << (t->value_format.empty() ? "" : " value-format=" + t->value_format);
  for (const auto& [column, fn] : t->column_aggregations) std::cout << " " << column << "=" << fn;
  if (t->value_format == "confluent") {
    std::cout << "\nschema: subject=" << t->value_schema_subject << " id=" << t->value_schema_id
              << " type=" << (t->value_schema_type.empty() ? "?" : t->value_schema_type)
              << " columns=";
    for (size_t i = 0; i < t->columns.size(); ++i) std::cout << (i ? "," : "") << t->columns[i];
  }
  std::cout << "\n";
  TextTable tt(
      {"PARTITION", "APPLIED", "ROWS(EST)", "CHECKPOINT", "GAP-BELOW", "HIGH-WATERMARK", "ERROR"});
  for (const auto& p : t->partitions) {
    tt.add({std::to_string(p.partition), std::to_string(p.applied_offset),
            std::to_string(p.row_count_estimate), std::to_string(p.checkpoint_offset),
            std::to_string(p.changelog_gap_below), std::to_string(p.high_watermark),
            p.error_code == 0
                ? "-"
                : protocol::error_name(static_cast<protocol::ErrorCode>(p.error_code))});
  }
  tt.print();
  return kExitOk;
}

}  // namespace

void register_table(CLI::App& app, Cli& cli) {
  auto* table = app.add_subcommand("table", "Primary-key tables");
  table->require_subcommand(1);

  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand("create", "Create a primary-key table");
    s->add_option("name", o->name, "Table (topic) name")->required();
    s->add_option("--partitions,-p", o->partitions, "Partition count")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    s->add_option("--config,-c", o->configs, "Table/topic config KEY=VALUE (repeatable)");
    on_run(s, cli, o, do_create);
  }
  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand("put", "Upsert one row");
    s->add_option("name", o->name)->required();
    s->add_option("key", o->key)->required();
    s->add_option("value", o->value)->required();
    on_run(s, cli, o, [](Cli& c, const TableOpts& x) { return do_write(c, x, false); });
  }
  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand("delete", "Delete one row");
    s->add_option("name", o->name)->required();
    s->add_option("key", o->key)->required();
    on_run(s, cli, o, [](Cli& c, const TableOpts& x) { return do_write(c, x, true); });
  }
  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand("get", "Look up rows by key");
    s->add_option("name", o->name)->required();
    s->add_option("keys", o->keys, "Keys")->required();
    s->add_flag("--follower-read", o->follower_read,
                "Ask the broker given by -b (any replica: committed rows) instead of the leaders");
    s->add_option("--min-offset", o->min_offset,
                  "Read-your-writes: only a state covering the log below this offset answers")
        ->check(CLI::NonNegativeNumber);
    s->add_option("--columns", o->columns, "Typed tables: only these columns (a,b,c)")
        ->delimiter(',');
    on_run(s, cli, o, do_get);
  }
  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand(
        "as-of", "Rows as they were at a time or offset (tables with table.history.enabled)");
    s->add_option("name", o->name)->required();
    s->add_option("keys", o->keys, "Keys");
    s->add_option("--at", o->at, "The point: a time, ms since the epoch (record timestamps)");
    s->add_option("--offset", o->at_offset, "The point: a log offset");
    s->add_option("--events", o->events,
                  "KEY<TAB>POINT lines (- = stdin): one answer per line, as JSON lines");
    s->add_option("--topic", o->events_topic,
                  "A log topic of events (its records' keys and timestamps, as of the start of "
                  "the read): one answer per event, as JSON lines");
    s->add_flag("--event-offsets", o->event_offsets,
                "The points of --events are log offsets (default: times in ms)");
    s->add_option("--columns", o->columns, "Typed tables: only these columns (a,b,c)")
        ->delimiter(',');
    on_run(s, cli, o, do_as_of);
  }
  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand("scan", "All rows (or rows with a key prefix), all partitions");
    s->add_option("name", o->name)->required();
    s->add_option("--prefix", o->prefix, "Only keys starting with this prefix");
    s->add_option("--limit", o->limit, "At most this many rows (0 = all)")
        ->check(CLI::NonNegativeNumber);
    s->add_option("--columns", o->columns, "Typed tables: only these columns (a,b,c)")
        ->delimiter(',');
    on_run(s, cli, o, do_scan);
  }
  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand("changelog", "Typed changes (insert/update/delete)");
    s->add_option("name", o->name)->required();
    s->add_option("--from", o->from, "Start offset in every partition (default: log start)")
        ->check(CLI::NonNegativeNumber);
    s->add_option("--limit", o->limit, "Stop after this many changes (0 = no limit)")
        ->check(CLI::NonNegativeNumber);
    s->add_flag("--follow,-f", o->follow, "Keep waiting for new changes (Ctrl-C stops)");
    s->add_option("--where", o->where,
                  "Typed tables: only changes whose row matches, e.g. \"amount >= 100 AND "
                  "(country = 'DE' OR risk IS NULL)\" (batches skipped by column statistics)");
    on_run(s, cli, o, do_changelog);
  }
  {
    auto o = std::make_shared<TableOpts>();
    auto* s = table->add_subcommand("describe", "Table settings and per-partition state");
    s->add_option("name", o->name)->required();
    on_run(s, cli, o, do_describe);
  }
}

}  // namespace strata::cli
