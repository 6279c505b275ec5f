#include "protocol/wire/records.h"

#include <cstring>

namespace strata::protocol {

bool Records::operator==(const Records& other) const {
  if (is_null != other.is_null) return false;
  if (size() != other.size()) return false;
  bool all_memory = true;
  for (const auto& p : parts) all_memory = all_memory && !p.is_file();
  for (const auto& p : other.parts) all_memory = all_memory && !p.is_file();
  if (!all_memory) {
    if (parts.size() != other.parts.size()) return false;
    for (size_t i = 0; i < parts.size(); ++i) {
      const auto& a = parts[i];
      const auto& b = other.parts[i];
      if (a.length != b.length || a.is_file() != b.is_file()) return false;
      if (a.is_file()) {
        if (a.fd != b.fd || a.file_offset != b.file_offset) return false;
      } else if (std::memcmp(a.data, b.data, a.length) != 0) {
        return false;
      }
    }
    return true;
  }
  // Compare the concatenations part by part without materialising them.
  size_t ia = 0, ib = 0, oa = 0, ob = 0;
  while (ia < parts.size() && ib < other.parts.size()) {
    const auto& a = parts[ia];
    const auto& b = other.parts[ib];
    size_t n = std::min<size_t>(a.length - oa, b.length - ob);
    if (n > 0 && std::memcmp(a.data + oa, b.data + ob, n) != 0) return false;
    oa += n;
    ob += n;
    if (oa == a.length) {
      ++ia;
      oa = 0;
    }
    if (ob == b.length) {
      ++ib;
      ob = 0;
    }
  }
  return true;
}

}  // namespace strata::protocol
