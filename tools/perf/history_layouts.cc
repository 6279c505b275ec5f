// strata-perf history-layouts: the two layouts of a PK table's history index, side by side in one
// run. Today's layout keeps each change's row in the index ('h' + key + offset → the row as the
// change left it); the alternative keeps only where the change is in the log ('h' + key +
// offset → timestamp, file position, size) and reads the row from the log when asked.
//
// Writes: the same records into two plain RocksDBs with PkState's options, each record a row put
// plus a history put of either payload; rates and SST bytes after a flush. Reads: a history
// table loaded through PkState, then random points by offset answered from the index (today's
// read, the row included), and the extra work the alternative adds per answer: reading the
// answer's record from the log (the enclosing batch located through the offset index, read,
// walked to the record).
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "pkindex/row_format.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"
#include "tools/perf/key_chooser.h"
#include "tools/perf/options.h"
#include "tools/perf/pk_load.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {
namespace {

namespace rf = pkindex::row_format;

// Today's history value: the row's encoding (18 bytes of kind, version, timestamp and TTL fields,
// then the value); the alternative's: timestamp (8), file position (8), size (4).
constexpr size_t kRowHeader = 18;
constexpr size_t kPositionPayload = 20;

struct RawLayout {
  double seconds = 0;
  uint64_t sst_bytes = 0;
};

Result<RawLayout> load_layout(pkindex::PkEnvironment& env, const std::string& path,
                              const Workload& w, int32_t batch, bool rows) {
  auto opened = open_raw_db(env, path);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<rocksdb::DB> db = std::move(*opened);
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  rocksdb::WriteBatch wb;
  std::string value, payload, hkey;
  char key[24];
  RawLayout out;
  for (int64_t i = 0; i < w.records;) {
    wb.Clear();
    const int64_t end = std::min<int64_t>(w.records, i + batch);
    for (; i < end; ++i) {
      const size_t kl = format_key(key, w.key_index(i));
      w.value(i, value);
      wb.Put(rocksdb::Slice(key, kl), value);
      hkey.clear();
      rf::append_history_prefix(hkey, {reinterpret_cast<const uint8_t*>(key), kl});
      hkey.resize(hkey.size() + 8);
      rf::put_be64(reinterpret_cast<uint8_t*>(hkey.data() + hkey.size() - 8), i);
      payload.assign(rows ? kRowHeader : kPositionPayload, '\0');
      rf::put_be64(reinterpret_cast<uint8_t*>(payload.data() + 1), i);  // distinct bytes
      if (rows) payload += value;
      wb.Put(hkey, payload);
    }
    const auto t0 = Clock::now();
    rocksdb::Status st = db->Write(wo, &wb);
    if (!st.ok()) return Status(Errc::io_error, "raw write: " + st.ToString());
    out.seconds += seconds_since(t0);
  }
  rocksdb::Status st = db->Flush(rocksdb::FlushOptions());
  if (!st.ok()) return Status(Errc::io_error, "raw flush: " + st.ToString());
  (void)db->GetIntProperty("rocksdb.total-sst-files-size", &out.sst_bytes);
  st = db->Close();
  if (!st.ok()) return Status(Errc::io_error, "raw close: " + st.ToString());
  return out;
}

// The record at `offset` read from the log as the alternative would: the enclosing batch located
// through the offset index, read whole, walked to the record. Returns the value's size.
Result<size_t> read_from_log(const storage::PartitionLog& log, int64_t offset,
                             protocol::RecordReader& reader, std::vector<uint8_t>& buf) {
  auto read = log.read(offset, 1, /*min_one=*/true, log.log_end_offset());
  if (!read.ok()) return read.status();
  if (read->ranges.empty()) return Status(Errc::not_found, "no batch at the offset");
  const auto& range = read->ranges.front();
  buf.resize(range.size);
  auto n = range.file->read(range.position, range.size, buf.data());
  if (!n.ok()) return n.status();
  std::span<const uint8_t> rest(buf.data(), *n);
  while (!rest.empty()) {
    const size_t size = protocol::peek_batch_size(rest);
    if (size == 0 || size > rest.size()) break;
    protocol::RecordBatchView batch(rest.first(size));
    rest = rest.subspan(size);
    if (batch.last_offset() < offset) continue;
    STRATA_RETURN_IF_ERROR(reader.reset(batch));
    protocol::Record r;
    for (;;) {
      auto more = reader.next(r);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (reader.offset_of(r) == offset) return r.value ? r.value->size() : 0;
    }
  }
  return Status(Errc::not_found, "offset " + std::to_string(offset) + " not in its batch");
}

}  // namespace

Status run_history_layouts(const HistoryLayoutsOptions& o) {
  if (o.records <= 0 || o.batch <= 0 || o.reads <= 0) {
    return Status(Errc::invalid_argument, "--records, --batch and --reads must be > 0");
  }
  Workload w{o.records, o.keys > 0 ? o.keys : o.records, o.value_size};
  auto dir = TempDir::make(o.dir);
  if (!dir.ok()) return dir.status();
  pkindex::PkEnvironment::Options eo;
  eo.block_cache_bytes = o.block_cache_mb << 20;
  pkindex::PkEnvironment env(eo);

  auto rows = load_layout(env, dir->path() + "/rows", w, o.batch, true);
  if (!rows.ok()) return rows.status();
  auto positions = load_layout(env, dir->path() + "/positions", w, o.batch, false);
  if (!positions.ok()) return positions.status();
  std::fprintf(stderr,
               "history-layouts: writes rows %.0f/s (%llu SST bytes), positions %.0f/s (%llu)\n",
               static_cast<double>(w.records) / rows->seconds,
               static_cast<unsigned long long>(rows->sst_bytes),
               static_cast<double>(w.records) / positions->seconds,
               static_cast<unsigned long long>(positions->sst_bytes));

  auto p = open_pk_partition(env, dir->path() + "/table", "full", true,
                             {{"table.history.enabled", "true"}});
  if (!p.ok()) return p.status();
  auto loaded = load_pk(*p, w, o.batch);
  if (!loaded.ok()) return loaded.status();
  STRATA_RETURN_IF_ERROR(p->state->flush());

  // Random points by offset; one reader per 1,000 points, as the broker holds one per request.
  std::mt19937_64 rng(7);
  std::vector<std::pair<int64_t, int64_t>> points;  // key index, offset
  points.reserve(static_cast<size_t>(o.reads));
  for (int64_t i = 0; i < o.reads; ++i) {
    const auto at = static_cast<int64_t>(rng() % static_cast<uint64_t>(w.records));
    points.emplace_back(w.key_index(static_cast<int64_t>(rng() % static_cast<uint64_t>(at + 1))),
                        at);
  }
  std::vector<int64_t> answers;
  answers.reserve(points.size());
  char key[24];
  const auto t0 = Clock::now();
  for (size_t i = 0; i < points.size();) {
    auto reader = p->state->history_reader();
    if (!reader.ok()) return reader.status();
    for (const size_t end = std::min(points.size(), i + 1000); i < end; ++i) {
      const size_t kl = format_key(key, points[i].first);
      auto r =
          reader->lookup({reinterpret_cast<const uint8_t*>(key), kl},
                         pkindex::AsOf{pkindex::AsOf::Kind::offset, points[i].second}, nullptr);
      if (!r.ok()) return r.status();
      if (r->found) answers.push_back(r->offset);
    }
  }
  const double index_s = seconds_since(t0);
  protocol::RecordReader reader;
  std::vector<uint8_t> buf;
  int64_t log_bytes = 0;
  const auto t1 = Clock::now();
  for (int64_t offset : answers) {
    auto n = read_from_log(*p->log, offset, reader, buf);
    if (!n.ok()) return n.status();
    log_bytes += static_cast<int64_t>(buf.size());
  }
  const double log_s = seconds_since(t1);
  STRATA_RETURN_IF_ERROR(p->state->close());
  STRATA_RETURN_IF_ERROR(p->log->close());
  const double n = static_cast<double>(answers.size());
  std::fprintf(stderr,
               "history-layouts: %zu of %lld points found; index read %.2f us/point, a log read "
               "%.2f us/answer (%.0f B read per answer)\n",
               answers.size(), static_cast<long long>(o.reads),
               index_s * 1e6 / static_cast<double>(o.reads), n > 0 ? log_s * 1e6 / n : 0.0,
               n > 0 ? static_cast<double>(log_bytes) / n : 0.0);
  print_summary({{"mode", "history-layouts"},
                 {"records", w.records},
                 {"key_space", w.key_space},
                 {"batch", o.batch},
                 {"value_size", w.value_size},
                 {"writes",
                  {{"rows",
                    {{"records_per_s", static_cast<double>(w.records) / rows->seconds},
                     {"sst_bytes", rows->sst_bytes}}},
                   {"positions",
                    {{"records_per_s", static_cast<double>(w.records) / positions->seconds},
                     {"sst_bytes", positions->sst_bytes}}},
                   {"rate_ratio_positions_vs_rows", rows->seconds / positions->seconds}}},
                 {"reads",
                  {{"points", o.reads},
                   {"found", answers.size()},
                   {"index_us_per_point", index_s * 1e6 / static_cast<double>(o.reads)},
                   {"log_read_us_per_answer", n > 0 ? log_s * 1e6 / n : 0.0},
                   {"log_bytes_per_answer", n > 0 ? static_cast<double>(log_bytes) / n : 0.0}}}});
  return Status::Ok();
}

}  // namespace strata::tools::perf
