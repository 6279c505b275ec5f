// decode_changes: typed changes of one changelog batch (see changelog_decode.h).
#include "pkindex/changelog_decode.h"

#include "protocol/pk/change_headers.h"

namespace strata::pkindex {

using namespace protocol::pk;  // wire facts: change headers, partitioners

Status decode_changes(protocol::RecordReader& reader, const protocol::RecordBatchView& batch,
                      int64_t from_offset, std::vector<ChangeView>& out) {
  if (batch.is_control() || batch.last_offset() < from_offset) return Status::Ok();
  STRATA_RETURN_IF_ERROR(reader.reset(batch));
  protocol::Record r;
  protocol::Header h;
  for (;;) {
    auto more = reader.next(r);
    if (!more.ok()) return more.status();
    if (!*more) break;
    const int64_t offset = reader.offset_of(r);
    if (offset < from_offset || !r.key) continue;
    std::optional<ChangeKind> kind;
    std::optional<std::span<const uint8_t>> before;
    auto it = r.headers();
    while (it.next(h)) {
      if (h.key == kChangeHeader && h.value) {
        kind = parse_change_kind(*h.value);
      } else if (h.key == kBeforeHeader && h.value) {
        before = *h.value;
      }
    }
    if (!kind || *kind == ChangeKind::none) continue;
    ChangeView& c = out.emplace_back();
    c.offset = offset;
    c.timestamp = reader.timestamp_of(r);
    c.kind = *kind;
    c.key = *r.key;
    if (*kind != ChangeKind::insert) c.before = before;
    if (*kind != ChangeKind::del) c.after = r.value;
  }
  return Status::Ok();
}

}  // namespace strata::pkindex
