// ReadChangelog (extension key 16003, v0; protocol/ext/read_changelog.proto): typed changes of PK
// partitions read from their logs (pkindex/changelog_decode.h), committed ones only: up to the
// last stable offset (the high watermark when no transaction is open), aborted transactions
// skipped; with a filter, only the changes whose row passes it, batches skipped by their column
// statistics. Long-polls like Fetch: with max_wait_ms > 0 and no change to return, the request
// waits on the broker's PartitionWatchers until a change arrives or the wait ends. Bounds and
// errors: broker/handlers/log_read.h (a long run of `none` records returns early, with
// next_offset past them).
#include "broker/handlers/handlers.h"
#include "broker/handlers/log_read.h"
#include "pkindex/changelog_decode.h"
#include "pkindex/confluent_values.h"
#include "protocol/ext/read_changelog.pb.h"

namespace strata::broker::handlers {

namespace {

using Resp = strata::ext::ReadChangelogResponse;

Resp::ChangeKind to_proto(pkindex::ChangeKind k) {
  switch (k) {
    case pkindex::ChangeKind::insert:
      return Resp::INSERT;
    case pkindex::ChangeKind::update:
      return Resp::UPDATE;
    case pkindex::ChangeKind::del:
      return Resp::DELETE;
    case pkindex::ChangeKind::none:
      break;
  }
  return Resp::CHANGE_KIND_UNSPECIFIED;
}

struct ChangelogRead {
  using Request = strata::ext::ReadChangelogRequest;
  using Response = Resp;

  // One partition's changes from `from` into `out` (see log_read.h): stops at `max_bytes` of
  // key + images (after at least one change) or `max_records`.
  static Result<int32_t> read(const storage::PartitionLog& log, int64_t from, int64_t lso,
                              int32_t max_records, int64_t max_bytes,
                              const std::optional<log_read::Filter>& filter,
                              const pkindex::TableConfig* confluent, int64_t& bytes,
                              int64_t& scan_budget, Resp::PartitionChanges& out) {
    std::vector<pkindex::ChangeView> changes;
    std::string row;        // a confluent table's image as its row's JSON
    int64_t at_offset = 0;  // the change being served
    // Rows are served as Lookup serves them, JSON: the log's framing (and an Avro table's
    // encoding) are for Kafka consumers' deserializers.
    auto set_image = [&](auto set, std::span<const uint8_t> image) -> Status {
      if (confluent) {
        auto r = pkindex::logged_row(image, *confluent, row);
        if (!r.ok()) {
          return Status(Errc::corruption,
                        "offset " + std::to_string(at_offset) + ": " + r.status().message());
        }
        image = *r;
      }
      set(image);
      bytes += static_cast<int64_t>(image.size());
      return Status::Ok();
    };
    protocol::RecordReader reader;
    int32_t count = 0;
    log_read::Skips skips;
    auto next = log_read::walk(
        log, from, lso, filter, scan_budget, skips,
        [&](const protocol::RecordBatchView& batch, int64_t& at) -> Result<bool> {
          changes.clear();
          STRATA_RETURN_IF_ERROR(pkindex::decode_changes(reader, batch, at, changes));
          for (const auto& c : changes) {
            if (count >= max_records || (count > 0 && bytes >= max_bytes)) {
              at = c.offset;
              return true;
            }
            at = c.offset + 1;
            if (filter && !pkindex::stats::passes(filter->predicate, c, *filter->table)) {
              out.set_filtered_changes(out.filtered_changes() + 1);
              continue;
            }
            auto* ch = out.add_changes();
            ch->set_offset(c.offset);
            ch->set_timestamp(c.timestamp);
            ch->set_kind(to_proto(c.kind));
            ch->set_key(c.key.data(), c.key.size());
            bytes += static_cast<int64_t>(c.key.size());
            at_offset = c.offset;
            if (c.before) {
              STRATA_RETURN_IF_ERROR(
                  set_image([&](std::span<const uint8_t> v) { ch->set_before(v.data(), v.size()); },
                            *c.before));
            }
            if (c.after) {
              STRATA_RETURN_IF_ERROR(
                  set_image([&](std::span<const uint8_t> v) { ch->set_after(v.data(), v.size()); },
                            *c.after));
            }
            if (++count >= max_records) return true;
          }
          return false;
        });
    out.set_skipped_batches(skips.batches);
    out.set_skipped_bytes(skips.bytes);
    if (!next.ok()) return next.status();
    out.set_next_offset(*next);
    return count;
  }
};

}  // namespace

void ext_read_changelog(RequestContext& ctx, protocol::Reader& body) {
  log_read::start<ChangelogRead>(ctx, body, "ReadChangelog", [](const TopicEntry& topic) {
    return topic.pk_table ? std::string() : "topic " + topic.name + " is not a primary-key table";
  });
}

}  // namespace strata::broker::handlers
