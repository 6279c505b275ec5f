// ReadLog (extension key 16008, v0; protocol/ext/read_log.proto): the committed records of a log
// topic's partitions as decoded records — with a filter, on a typed log topic
// (table.value.format=json or confluent), only those whose value's row matches, batches skipped by
// their column statistics (table.statistics.columns). Plain Fetch is unchanged and never filters.
// Long-polls like Fetch. Bounds and errors: broker/handlers/log_read.h; a primary-key table ->
// INVALID_REQUEST (its changelog is ReadChangelog's).
#include "broker/handlers/handlers.h"
#include "broker/handlers/log_read.h"
#include "protocol/ext/read_log.pb.h"
#include "protocol/record/record_reader.h"

namespace strata::broker::handlers {

namespace {

using Resp = strata::ext::ReadLogResponse;

struct RecordsRead {
  using Request = strata::ext::ReadLogRequest;
  using Response = Resp;

  // One partition's records from `from` into `out` (see log_read.h): stops at `max_bytes` of
  // keys, values and headers (after at least one record) or `max_records`.
  static Result<int32_t> read(const storage::PartitionLog& log, int64_t from, int64_t lso,
                              int32_t max_records, int64_t max_bytes,
                              const std::optional<log_read::Filter>& filter,
                              const pkindex::TableConfig* /*confluent: PK tables only*/,
                              int64_t& bytes, int64_t& scan_budget, Resp::PartitionRecords& out) {
    protocol::RecordReader reader;
    int32_t count = 0;
    log_read::Skips skips;
    auto next = log_read::walk(
        log, from, lso, filter, scan_budget, skips,
        [&](const protocol::RecordBatchView& batch, int64_t& at) -> Result<bool> {
          if (batch.is_control()) return false;  // transaction markers carry no records
          STRATA_RETURN_IF_ERROR(reader.reset(batch));
          protocol::Record r;
          protocol::Header h;
          for (;;) {
            auto more = reader.next(r);
            if (!more.ok()) return more.status();
            if (!*more) return false;
            const int64_t offset = reader.offset_of(r);
            if (offset < at) continue;
            if (count >= max_records || (count > 0 && bytes >= max_bytes)) {
              at = offset;
              return true;
            }
            at = offset + 1;
            if (filter && !pkindex::stats::passes(filter->predicate, r.value, *filter->table,
                                                  filter->writers.get())) {
              out.set_filtered_records(out.filtered_records() + 1);
              continue;
            }
            auto* rec = out.add_records();
            rec->set_offset(offset);
            rec->set_timestamp(reader.timestamp_of(r));
            if (r.key) {
              rec->set_key(r.key->data(), r.key->size());
              bytes += static_cast<int64_t>(r.key->size());
            }
            if (r.value) {
              rec->set_value(r.value->data(), r.value->size());
              bytes += static_cast<int64_t>(r.value->size());
            }
            auto it = r.headers();
            while (it.next(h)) {
              auto* oh = rec->add_headers();
              oh->set_key(h.key.data(), h.key.size());
              bytes += static_cast<int64_t>(h.key.size());
              if (h.value) {
                oh->set_value(h.value->data(), h.value->size());
                bytes += static_cast<int64_t>(h.value->size());
              }
            }
            if (++count >= max_records) return true;
          }
        });
    out.set_skipped_batches(skips.batches);
    out.set_skipped_bytes(skips.bytes);
    if (!next.ok()) return next.status();
    out.set_next_offset(*next);
    return count;
  }
};

}  // namespace

void ext_read_log(RequestContext& ctx, protocol::Reader& body) {
  log_read::start<RecordsRead>(ctx, body, "ReadLog", [](const TopicEntry& topic) {
    return topic.pk_table ? "topic " + topic.name + " is a primary-key table: use ReadChangelog"
                          : std::string();
  });
}

}  // namespace strata::broker::handlers
