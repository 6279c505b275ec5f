// PkState::write and its compute step: the input batch -> the output (changelog) batch -> the
// caller's append -> apply or rollback; see pk_state.h and docs/pk-tables.md.
#include <string>

#include "pkindex/pk_state.h"
#include "pkindex/row_format.h"
#include "pkindex/typed_row.h"
#include "protocol/pk/change_headers.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"

namespace strata::pkindex {

using namespace protocol::pk;  // wire facts: change headers, partitioners

namespace rf = row_format;
using protocol::Header;

namespace {

std::string_view as_sv(std::span<const uint8_t> s) {
  return {reinterpret_cast<const char*>(s.data()), s.size()};
}
std::span<const uint8_t> as_span(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

WriteResult PkState::write(const WriteInput& input, int64_t now_ms, const AppendFn& append) {
  quiet_perf_context();
  WriteResult out;
  std::lock_guard wl(write_mu_);
  WritingScope writing(this);
  if (failed_) {
    if (Status st = heal_locked(); !st.ok()) {
      out.status = std::move(st);
      return out;
    }
  }
  // A transactional batch goes to its producer's open transaction (created here, forgotten again
  // when nothing of it got appended).
  const bool transactional = input.batch.is_transactional() && !input.batch.is_control();
  const int64_t producer_id = input.batch.producer_id();
  OpenTxn* txn = transactional ? &txns_[producer_id] : nullptr;
  Overlay& target = txn ? txn->batches : overlay_;
  auto rollback = [&](uint64_t id) {
    target.rollback(id);
    if (txn && txn->batches.empty()) txns_.erase(producer_id);
  };
  Computed c = compute(input, now_ms, target, txn);
  if (!c.status.ok()) {
    if (txn && txn->batches.empty()) txns_.erase(producer_id);
    out.status = std::move(c.status);
    out.record_errors = std::move(c.record_errors);
    return out;
  }
  if (static_cast<int64_t>(c.batch.size()) > input.max_batch_bytes) {
    rollback(c.id);
    out.status = Status(Errc::too_large, "the changelog batch (" + std::to_string(c.batch.size()) +
                                             " bytes) exceeds its limit of " +
                                             std::to_string(input.max_batch_bytes) + " bytes");
    return out;
  }
  auto appended = append(c.batch);
  if (!appended.ok() || appended->producer_check != storage::ProducerCheck::ok) {
    // Nothing was appended (an I/O error, or an idempotent duplicate / out-of-order / stale
    // epoch verdict): the state must not see this batch.
    rollback(c.id);
    if (!appended.ok()) {
      out.status = appended.status();
    } else {
      out.appended = std::move(*appended);
    }
    return out;
  }
  out.appended = std::move(*appended);
  out.records = protocol::RecordBatchView(c.batch).record_count();
  if (Status st = target.appended(c.id, out.appended.base_offset); !st.ok()) {
    rollback(c.id);
    failed_ = true;  // the log and the overlay disagree on offsets: the state is unusable
    out.status = Status(Errc::io_error, path_ + ": " + st.message());
    return out;
  }
  if (txn) {  // held until its marker (end_transaction)
    hold_in_txn_locked(producer_id, *txn, out.appended.base_offset);
    txns_through_ = -1;  // replay steps are a follower's; a writer's transactions are its own
    return out;
  }
  if (!input.hold) {
    while (overlay_.ready(out.appended.last_offset)) {
      if (Status st = apply_front(); !st.ok()) {
        out.status = std::move(st);
        return out;
      }
    }
  }
  return out;
}

PkState::Computed PkState::compute(const WriteInput& input, int64_t now, Overlay& target,
                                   const OpenTxn* txn) {
  const protocol::RecordBatchView& in = input.batch;
  const int64_t max_record_bytes = input.max_record_bytes;
  // What the records may add up to before compression: the output's limit when it is stored
  // uncompressed (readers take those in place), never more than a reader decompresses when not.
  const uint64_t max_raw_bytes =
      input.codec == codec::Compression::none
          ? static_cast<uint64_t>(std::max<int64_t>(input.max_batch_bytes, 0))
          : protocol::RecordReader::kDefaultMaxDecompressedBytes;
  Computed res;
  auto db_lock = read_lock();  // current() reads RocksDB
  if (!db_lock || failed_) {
    res.status = failed_ ? Status(Errc::io_error, "primary-key state is offline after an I/O error")
                         : Status(Errc::shutting_down, "primary-key state is closed");
    return res;
  }
  if (in.is_control()) {
    res.status =
        Status(Errc::invalid_argument, "control batches are not accepted by primary-key tables");
    return res;
  }
  auto reader = protocol::RecordReader::open(in);
  if (!reader.ok()) {
    res.status = Status(Errc::corruption, reader.status().message());
    return res;
  }
  const TableConfig& table = options_.table;
  const bool versioned = table.merge_engine == MergeEngine::versioned;

  Overlay::Batch p;
  p.last_offset_delta = in.last_offset_delta();
  protocol::RecordBatchBuilder b(input.codec);
  b.set_producer(in.producer_id(), in.producer_epoch(), in.base_sequence());
  b.set_transactional(in.is_transactional());

  // TTL: every output record carries the broker's append time; the row stores it.
  const bool ttl = table.ttl_ms > 0;
  const int64_t append_time = ttl ? now : -1;
  uint8_t append_time_be[8];
  rf::put_be64(append_time_be, append_time);
  const std::optional<int64_t> row_append_time =
      ttl ? std::optional<int64_t>(append_time) : std::nullopt;
  std::vector<Header> headers;
  std::vector<uint8_t> row_version_be;  // a `none` record's row version (empty: unversioned)
  uint8_t row_clock_be[8];              // a `none` record's row TTL clock
  int64_t none_ttl_clock = -1;
  std::string db_key;
  std::optional<std::vector<std::string>> columns;  // the record's strata.columns
  // confluent tables: the record's value decoded (the row's JSON), the images it logs in the
  // table schema's framing, and (Avro or Protobuf table schema) the row as read back from its
  // image.
  const bool confluent = table.value_format == ValueFormat::confluent;
  // A JSON Schema table logs its rows as JSON: the merged row is checked against the schema
  // (an Avro or Protobuf table's are, by their encoding in logged_image).
  const typed::RowCheck row_check = [this](const nlohmann::json& row) {
    return options_.decoder->check_row(row);
  };
  const bool check_rows = confluent && !table.schema_typed_rows() && options_.decoder;
  nlohmann::json decoded;
  std::string framed_after, framed_before, conformed;
  protocol::Record r;
  int32_t index = 0;
  size_t oversized = 0;  // record errors that are only a size over max_record_bytes
  for (;; ++index) {
    auto more = reader->next(r);
    if (!more.ok()) {
      res.status = Status(Errc::corruption, more.status().message());
      return res;
    }
    if (!*more) break;
    auto error = [&](std::string msg) { res.record_errors.push_back({index, std::move(msg)}); };
    if (r.offset_delta != index) {
      error("record offset deltas must be 0, 1, 2, ...");
      continue;
    }
    if (!r.key) {
      error("a primary-key table needs a record key");
      continue;
    }
    // The row as stored and served, decompressed. A Java broker answers a record over
    // max.message.bytes with MESSAGE_TOO_LARGE (RecordTooLargeException), not INVALID_RECORD:
    // the record is well formed, only too big, and the Java producer then splits the batch so
    // that only the oversized record fails. So too_large, unless a structural error comes too.
    const size_t record_bytes =
        r.key->size() + (r.value ? r.value->size() : 0) + r.headers_raw.size();
    if (static_cast<uint64_t>(record_bytes) > static_cast<uint64_t>(max_record_bytes)) {
      error("record of " + std::to_string(record_bytes) +
            " bytes (key, value and headers, decompressed) exceeds max.message.bytes " +
            std::to_string(max_record_bytes));
      ++oversized;
      continue;
    }
    const int32_t owner = partition_for(*r.key);
    if (owner != options_.partition) {
      error("key belongs to partition " + std::to_string(owner) + " under the table's " +
            std::string(partitioner_name(table.partitioner)) + " partitioner, not partition " +
            std::to_string(options_.partition));
      continue;
    }
    Write w{r.value, std::nullopt};
    if (confluent && r.value) {
      if (!options_.decoder) {
        error("this broker has no schema registry to decode the table's values");
        continue;
      }
      auto d = options_.decoder->decode(*r.value);
      if (!d.ok()) {
        // The registry, not the value: retriable — unless the batch already fails for good.
        if (d.status().code() == Errc::unavailable && res.record_errors.empty()) {
          res.status = d.status();
          return res;
        }
        error(d.status().message());
        continue;
      }
      decoded = std::move(*d);
      w.parsed = &decoded;
      if (check_rows) w.row_check = &row_check;
    }
    headers.clear();
    columns.reset();
    bool bad = false;
    auto it = r.headers();
    Header h;
    while (it.next(h)) {
      if (h.key == kColumnsHeader && table.typed() && !columns) {
        // Target columns of a partial write: consumed here, not logged (the row after is).
        auto parsed = typed::parse_columns(h.value ? as_sv(*h.value) : std::string_view());
        if (!parsed.ok()) {
          error(parsed.status().message());
          bad = true;
          break;
        }
        columns = std::move(*parsed);
        w.columns = &*columns;
        // A confluent table's logged rows must keep to its schema: no column it lacks.
        if (confluent && options_.decoder) {
          if (Status st = options_.decoder->check_columns(*columns); !st.ok()) {
            if (st.code() == Errc::unavailable && res.record_errors.empty()) {
              res.status = st;  // the registry cannot be read yet: retriable, as above
              return res;
            }
            error(st.message());
            bad = true;
            break;
          }
        }
        continue;
      }
      if (h.key.starts_with(kReservedHeaderPrefix)) {
        error("header " + std::string(h.key) + ": names under strata. are reserved" +
              (h.key == kColumnsHeader ? " (strata.columns: once, on typed tables only)" : ""));
        bad = true;
        break;
      }
      if (versioned && h.key == table.version_header) {
        if (!h.value || h.value->size() != 8) {
          error("version header " + table.version_header +
                " must be a signed 64-bit big-endian integer");
          bad = true;
          break;
        }
        w.version = rf::get_be64(h.value->data());
      }
      headers.push_back(h);
    }
    if (bad || !res.record_errors.empty()) continue;

    db_key.clear();
    rf::append_row_key(db_key, *r.key);
    if (auto lock = txn_locks_.find(db_key);
        lock != txn_locks_.end() && (!txn || lock->second != in.producer_id())) {
      // Another producer's open transaction wrote this key: what this record changes depends on
      // whether that one commits. Nothing of the batch is appended; the client retries.
      res.status = Status(Errc::busy, "key held by the open transaction of producer " +
                                          std::to_string(lock->second) + " until it ends");
      return res;
    }
    auto cur_or = current(db_key, p, txn ? &txn->batches : nullptr);
    if (!cur_or.ok()) {
      res.status = cur_or.status();
      return res;
    }
    const std::optional<Overlay::Row>& cur_row = *cur_or;
    std::optional<CurrentRow> cur;
    if (cur_row && cur_row->present) cur = CurrentRow{as_span(cur_row->value), cur_row->version};
    Decision d = decide(table, *merger_, cur, w);
    if (d.rejected) {
      error(std::move(d.reason));
      continue;
    }
    std::optional<std::span<const uint8_t>> after;
    bool after_framed = false;  // framed_after holds the after-image already
    switch (d.kind) {
      case ChangeKind::insert:
      case ChangeKind::update: {
        after = d.after(w);
        if (table.schema_typed_rows()) {
          // The state keeps the row exactly as replay will read it back from the log: every
          // column present, each value as the table schema's type makes it (3 in a double
          // column is 3.0). A row the schema cannot hold fails here, before anything is logged.
          auto image = logged_image(*after, table, framed_after);
          auto row = image.ok() ? logged_row(*image, table, conformed) : image;
          if (!row.ok()) {
            error(row.status().message());
            continue;
          }
          after = *row;
          after_framed = true;
        }
        Overlay::Row row{true, std::string(as_sv(*after)), w.version, append_time};
        Overlay::Op op{db_key, {}, index, reader->timestamp_of(r), -1};
        rf::encode_row(op.encoded, 0, reader->timestamp_of(r), w.version, *after, row_append_time);
        p.ops.push_back(std::move(op));
        p.rows[db_key] = std::move(row);
        break;
      }
      case ChangeKind::del:
        p.ops.push_back(Overlay::Op{db_key, {}, index, reader->timestamp_of(r), -1});
        p.rows[db_key] = Overlay::Row{};
        break;
      case ChangeKind::none:
        // The row stays as it is, but its newest log record is now this one (the only record of
        // the key a compacted log may keep): it carries the row, and the state records this
        // record as the row's last write so that replay of the log gives the same state.
        if (cur) {
          after = cur->value;
          none_ttl_clock = cur_row->ttl_clock;
          row_version_be.clear();
          if (cur->version) {
            row_version_be.resize(8);
            rf::put_be64(row_version_be.data(), *cur->version);
          }
          Overlay::Op op{db_key, {}, index, reader->timestamp_of(r), -1};
          rf::encode_row(op.encoded, 0, reader->timestamp_of(r), cur->version, cur->value,
                         ttl ? std::optional<int64_t>(cur_row->ttl_clock) : std::nullopt);
          p.ops.push_back(std::move(op));
          p.rows[db_key] = *cur_row;
        }
        break;
    }
    headers.push_back(Header{kChangeHeader, as_span(change_kind_name(d.kind))});
    if (table.image == ChangelogImage::full && cur &&
        (d.kind == ChangeKind::update || d.kind == ChangeKind::del)) {
      auto before = confluent ? logged_image(cur->value, table, framed_before)
                              : Result<std::span<const uint8_t>>(cur->value);
      if (!before.ok()) {
        error(before.status().message());
        continue;
      }
      headers.push_back(Header{kBeforeHeader, *before});
    }
    if (after_framed) {
      after = as_span(framed_after);
    } else if (confluent && after) {
      auto image = logged_image(*after, table, framed_after);
      if (!image.ok()) {
        error(image.status().message());
        continue;
      }
      after = *image;
    }
    const bool carries_row = d.kind == ChangeKind::none && cur;
    if (carries_row) headers.push_back(Header{kRowVersionHeader, row_version_be});
    if (ttl && carries_row) {
      rf::put_be64(row_clock_be, none_ttl_clock);
      headers.push_back(Header{kAppendTimeHeader, std::span<const uint8_t>(row_clock_be)});
    } else if (ttl) {
      headers.push_back(Header{kAppendTimeHeader, std::span<const uint8_t>(append_time_be)});
    }
    b.add(in.base_timestamp() + r.timestamp_delta, *r.key, after, headers);
    if (b.uncompressed_batch_size() > max_raw_bytes) {
      res.status =
          Status(Errc::too_large, "the changelog batch outgrows " + std::to_string(max_raw_bytes) +
                                      " bytes at record " + std::to_string(index));
      return res;
    }
  }
  if (!res.record_errors.empty()) {
    const Errc e = oversized == res.record_errors.size() ? Errc::too_large : Errc::invalid_argument;
    res.status = Status(e, res.record_errors.front().message);
    return res;
  }
  if (index != in.record_count() || index == 0 || in.last_offset_delta() != index - 1) {
    res.status = Status(Errc::invalid_argument, "record count does not match lastOffsetDelta");
    return res;
  }
  res.batch = b.build();
  if (in.timestamp_type() == protocol::TimestampType::log_append_time) {
    protocol::set_log_append_time(res.batch, in.max_timestamp());
  }
  res.id = target.push(std::move(p));
  return res;
}

}  // namespace strata::pkindex
