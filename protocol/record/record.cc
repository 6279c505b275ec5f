// Header decoding (see record.h).
#include "protocol/record/record.h"

#include "protocol/record/varint.h"

namespace strata::protocol {
namespace detail {

bool decode_header(std::span<const uint8_t> raw, size_t& pos, Header& out) {
  int32_t key_len = 0;
  if (!read_varint(raw, pos, key_len)) return false;
  if (key_len < 0 || static_cast<size_t>(key_len) > raw.size() - pos) return false;
  out.key = std::string_view(reinterpret_cast<const char*>(raw.data() + pos),
                             static_cast<size_t>(key_len));
  pos += static_cast<size_t>(key_len);
  int32_t value_len = 0;
  if (!read_varint(raw, pos, value_len)) return false;
  if (value_len < -1) return false;
  if (value_len == -1) {
    out.value.reset();
    return true;
  }
  if (static_cast<size_t>(value_len) > raw.size() - pos) return false;
  out.value = raw.subspan(pos, static_cast<size_t>(value_len));
  pos += static_cast<size_t>(value_len);
  return true;
}

}  // namespace detail

bool HeaderIterator::next(Header& out) {
  if (remaining_ <= 0) return false;
  if (!detail::decode_header(raw_, pos_, out)) {
    remaining_ = 0;
    return false;
  }
  --remaining_;
  return true;
}

}  // namespace strata::protocol
