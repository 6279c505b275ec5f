#include "broker/group/consumer_protocol.h"

namespace strata::broker::group {

std::optional<std::vector<std::string>> parse_subscription_topics(const std::vector<uint8_t>& md) {
  size_t p = 0;
  auto need = [&](size_t n) { return md.size() - p >= n; };
  auto u16 = [&] {
    uint16_t v = static_cast<uint16_t>((md[p] << 8) | md[p + 1]);
    p += 2;
    return v;
  };
  if (!need(6)) return std::nullopt;
  int16_t version = static_cast<int16_t>(u16());
  if (version < 0) return std::nullopt;
  int32_t n = static_cast<int32_t>((uint32_t(md[p]) << 24) | (uint32_t(md[p + 1]) << 16) |
                                   (uint32_t(md[p + 2]) << 8) | uint32_t(md[p + 3]));
  p += 4;
  if (n < 0 || static_cast<size_t>(n) > md.size()) return std::nullopt;
  std::vector<std::string> out;
  for (int32_t i = 0; i < n; ++i) {
    if (!need(2)) return std::nullopt;
    int16_t len = static_cast<int16_t>(u16());
    if (len < 0 || !need(static_cast<size_t>(len))) return std::nullopt;
    out.emplace_back(reinterpret_cast<const char*>(md.data() + p), static_cast<size_t>(len));
    p += static_cast<size_t>(len);
  }
  return out;
}

}  // namespace strata::broker::group
