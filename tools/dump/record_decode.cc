#include "tools/dump/record_decode.h"

#include "protocol/pk/change_headers.h"

namespace strata::dump {

Status for_each_record(protocol::RecordReader& reader, std::span<const uint8_t> batch,
                       size_t max_records, const std::function<void(const DecodedRecord&)>& fn) {
  protocol::RecordBatchView view(batch);
  STRATA_RETURN_IF_ERROR(reader.reset(view));
  protocol::Record rec;
  size_t n = 0;
  while (n < max_records) {
    auto more = reader.next(rec);
    if (!more.ok()) return more.status();
    if (!*more) break;
    DecodedRecord d;
    d.offset = reader.offset_of(rec);
    d.timestamp = reader.timestamp_of(rec);
    d.record = &rec;
    auto it = rec.headers();
    protocol::Header h;
    while (it.next(h)) {
      if (h.key == protocol::pk::kChangeHeader && h.value) {
        d.change =
            std::string_view(reinterpret_cast<const char*>(h.value->data()), h.value->size());
      } else if (h.key == protocol::pk::kBeforeHeader) {
        d.before = h.value;
      }
    }
    fn(d);
    ++n;
  }
  return Status::Ok();
}

}  // namespace strata::dump
