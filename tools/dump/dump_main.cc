// strata-dump: reads a Strata data directory's files offline — log segments, offset/time indexes,
// primary-key RocksDB state and whole partition directories — like Kafka's DumpLogSegments.
// Never writes to what it reads. Usage and the JSON fields: docs/dump.md. Exit codes: commands.h.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "tools/dump/commands.h"

int main(int argc, char** argv) {
  using namespace strata::dump;
  CLI::App app{"strata-dump: inspect Strata log segments, indexes and PK state offline"};
  app.require_subcommand(1);
  app.fallthrough();
  std::string format = "text";
  app.add_option("--output,-o", format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();

  SegmentOptions seg;
  auto* s =
      app.add_subcommand("segment", "batch headers (and records) of a .log segment, CRC checks");
  s->add_option("file", seg.path, "<20-digit base offset>.log")->required();
  s->add_flag("--records", seg.records, "also print every record (key, value, headers, PK change)");
  s->add_option("--max-records", seg.max_records, "print at most N records (-1 = all)")
      ->capture_default_str();
  s->add_option("--max-bytes", seg.max_bytes, "truncate keys/values/headers to N bytes (0 = none)")
      ->capture_default_str();

  IndexOptions idx;
  auto* i = app.add_subcommand("index", "entries of a .index or .timeindex file");
  i->add_option("file", idx.path, "<base>.index or <base>.timeindex")->required();
  i->add_flag("--verify", idx.verify, "check every entry against the segment's .log");
  i->add_option("--log", idx.log_path, "the .log to verify against (default: the sibling .log)");

  CheckpointOptions cp;
  auto* c = app.add_subcommand("checkpoint",
                               "a PK partition's RocksDB state: <partition>/kv or "
                               "<partition>/kv-checkpoints/<offset> (opened read-only)");
  c->add_option("dir", cp.path, "RocksDB directory")->required();
  c->add_option("--keys", cp.keys, "print the first N rows")->capture_default_str();
  c->add_option("--max-bytes", cp.max_bytes, "truncate keys/values to N bytes (0 = none)")
      ->capture_default_str();

  PartitionOptions part;
  auto* p = app.add_subcommand("partition",
                               "summary of a partition directory: segments, indexes, PK state");
  p->add_option("dir", part.path, "<log.dir>/<topic>-<partition>")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitError;
  }
  Output out(format == "json" ? Format::json : Format::text, stdout);
  try {
    if (s->parsed()) return run_segment(seg, out);
    if (i->parsed()) return run_index(idx, out);
    if (c->parsed()) return run_checkpoint(cp, out);
    if (p->parsed()) return run_partition(part, out);
  } catch (const std::exception& e) {
    // Nothing below throws on bad input by design; this is the last line of defence (e.g.
    // bad_alloc).
    std::fprintf(stderr, "strata-dump: internal error: %s\n", e.what());
    return kExitError;
  }
  return kExitError;
}
