#include "broker/group/group_records.h"

#include <limits>

namespace strata::broker::group {

namespace {

void put_u8(std::string& s, uint8_t v) { s.push_back(static_cast<char>(v)); }
void put_u16(std::string& s, uint16_t v) {
  put_u8(s, static_cast<uint8_t>(v >> 8));
  put_u8(s, static_cast<uint8_t>(v));
}
void put_u32(std::string& s, uint32_t v) {
  for (int i = 3; i >= 0; --i) put_u8(s, static_cast<uint8_t>(v >> (8 * i)));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 7; i >= 0; --i) put_u8(s, static_cast<uint8_t>(v >> (8 * i)));
}
void put_str(std::string& s, std::string_view v) {
  put_u32(s, static_cast<uint32_t>(v.size()));
  s.append(v);
}
void put_bytes(std::string& s, const Bytes& b) {
  put_u32(s, static_cast<uint32_t>(b.size()));
  s.append(reinterpret_cast<const char*>(b.data()), b.size());
}
void put_opt(std::string& s, const std::optional<std::string>& v) {
  put_u8(s, v ? 1 : 0);
  if (v) put_str(s, *v);
}

// Bounds-checked reader; `ok` turns false on any overrun.
struct In {
  std::string_view d;
  size_t p = 0;
  bool ok = true;
  bool need(size_t n) {
    if (!ok || d.size() - p < n) ok = false;
    return ok;
  }
  uint64_t uint(int bytes) {
    if (!need(static_cast<size_t>(bytes))) return 0;
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(d[p++]);
    return v;
  }
  std::string str() {
    uint32_t n = static_cast<uint32_t>(uint(4));
    if (!need(n)) return {};
    std::string s(d.substr(p, n));
    p += n;
    return s;
  }
  Bytes bytes() {
    std::string s = str();
    return Bytes(s.begin(), s.end());
  }
  std::optional<std::string> opt() {
    if (uint(1) == 0) return std::nullopt;
    return str();
  }
};

}  // namespace

namespace records {

std::string group_key(std::string_view group) {
  std::string k("g");
  k.append(group);
  return k;
}

namespace {
std::string offset_prefix(const std::string& g) {
  std::string k = "o";
  put_u16(k, static_cast<uint16_t>(g.size()));
  k += g;
  return k;
}

}  // namespace

std::string offset_key(const OffsetKey& k) {
  std::string s = offset_prefix(k.group);
  put_u16(s, static_cast<uint16_t>(k.topic.size()));
  s += k.topic;
  put_u32(s, static_cast<uint32_t>(k.partition));
  return s;
}

bool decode_offset_key(std::string_view key, OffsetKey& out) {
  In in{key, 1};
  uint16_t gl = static_cast<uint16_t>(in.uint(2));
  if (!in.need(gl)) return false;
  out.group = std::string(key.substr(in.p, gl));
  in.p += gl;
  uint16_t tl = static_cast<uint16_t>(in.uint(2));
  if (!in.need(tl)) return false;
  out.topic = std::string(key.substr(in.p, tl));
  in.p += tl;
  out.partition = static_cast<int32_t>(in.uint(4));
  return in.ok && in.p == key.size();
}

std::string encode_offset(const OffsetEntry& e) {
  std::string s;
  put_u8(s, 1);
  put_u64(s, static_cast<uint64_t>(e.offset));
  put_u32(s, static_cast<uint32_t>(e.leader_epoch));
  put_u64(s, static_cast<uint64_t>(e.commit_ms));
  put_u64(s, static_cast<uint64_t>(e.expire_ms));
  put_str(s, e.metadata);
  return s;
}

bool decode_offset(std::string_view v, OffsetEntry& e) {
  In in{v};
  if (in.uint(1) != 1) return false;
  e.offset = static_cast<int64_t>(in.uint(8));
  e.leader_epoch = static_cast<int32_t>(in.uint(4));
  e.commit_ms = static_cast<int64_t>(in.uint(8));
  e.expire_ms = static_cast<int64_t>(in.uint(8));
  e.metadata = in.str();
  return in.ok;
}

std::string encode_group(const Group& g) {
  std::string s;
  put_u8(s, 1);
  put_u32(s, static_cast<uint32_t>(g.generation));
  put_opt(s, g.protocol_type);
  put_opt(s, g.protocol_name);
  put_opt(s, g.leader);
  put_u64(s, static_cast<uint64_t>(g.empty_since_ms));
  put_u32(s, static_cast<uint32_t>(g.members.size()));
  for (const auto& [id, m] : g.members) {
    put_str(s, m.member_id);
    put_opt(s, m.instance_id);
    put_str(s, m.client_id);
    put_str(s, m.client_host);
    put_u32(s, static_cast<uint32_t>(m.session_timeout_ms));
    put_u32(s, static_cast<uint32_t>(m.rebalance_timeout_ms));
    put_str(s, m.protocol_type);
    put_u32(s, static_cast<uint32_t>(m.protocols.size()));
    for (const auto& [name, md] : m.protocols) {
      put_str(s, name);
      put_bytes(s, md);
    }
    put_bytes(s, m.assignment);
  }
  return s;
}

bool decode_group(std::string_view data, Group& g) {
  In in{data};
  if (in.uint(1) != 1) return false;
  g.generation = static_cast<int32_t>(in.uint(4));
  g.protocol_type = in.opt();
  g.protocol_name = in.opt();
  g.leader = in.opt();
  g.empty_since_ms = static_cast<int64_t>(in.uint(8));
  uint32_t n = static_cast<uint32_t>(in.uint(4));
  for (uint32_t i = 0; i < n && in.ok; ++i) {
    Member m;
    m.member_id = in.str();
    m.instance_id = in.opt();
    m.client_id = in.str();
    m.client_host = in.str();
    m.session_timeout_ms = static_cast<int32_t>(in.uint(4));
    m.rebalance_timeout_ms = static_cast<int32_t>(in.uint(4));
    m.protocol_type = in.str();
    uint32_t np = static_cast<uint32_t>(in.uint(4));
    for (uint32_t j = 0; j < np && in.ok; ++j) {
      std::string name = in.str();
      m.protocols.emplace_back(std::move(name), in.bytes());
    }
    m.assignment = in.bytes();
    if (m.instance_id) g.static_members[*m.instance_id] = m.member_id;
    std::string id = m.member_id;
    g.members.emplace(std::move(id), std::move(m));
  }
  g.state = g.members.empty() ? GroupState::empty : GroupState::stable;
  return in.ok && in.p == data.size();
}

std::optional<std::string> group_of(std::string_view key) {
  if (key.empty()) return std::nullopt;
  if (key[0] == 'g') return std::string(key.substr(1));
  if (key[0] == 'o') {
    OffsetKey k;
    if (decode_offset_key(key, k)) return std::move(k.group);
  }
  return std::nullopt;
}

Status apply(std::map<std::string, Group>& groups, std::string_view key,
             std::optional<std::string_view> value) {
  if (key.empty()) return Status(Errc::corruption, "group record without a key");
  if (key[0] == 'g') {
    std::string id(key.substr(1));
    if (!value) {
      groups.erase(id);
      return Status::Ok();
    }
    Group& g = groups[id];
    auto offsets = std::move(g.offsets);
    g = Group{};
    g.id = id;
    g.offsets = std::move(offsets);
    if (!decode_group(*value, g)) {
      return Status(Errc::corruption, "bad record for group '" + id + "'");
    }
    return Status::Ok();
  }
  if (key[0] == 'o') {
    OffsetKey ok;
    if (!decode_offset_key(key, ok)) return Status(Errc::corruption, "bad offset record key");
    if (!value) {
      auto it = groups.find(ok.group);
      if (it != groups.end()) it->second.offsets.erase({ok.topic, ok.partition});
      return Status::Ok();
    }
    OffsetEntry e;
    if (!decode_offset(*value, e)) {
      return Status(Errc::corruption, "bad offset record of group '" + ok.group + "'");
    }
    Group& g = groups[ok.group];
    g.id = ok.group;
    g.offsets[{ok.topic, ok.partition}] = std::move(e);
    return Status::Ok();
  }
  return Status(Errc::corruption, "unknown group record kind");
}

}  // namespace records

int32_t java_string_hash(std::string_view s) {
  uint32_t h = 0;  // Java's int arithmetic wraps: unsigned here, the bits are the same
  auto unit = [&h](uint32_t u) { h = h * 31 + u; };
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<uint8_t>(s[i]);
    uint32_t cp = 0xFFFD;
    size_t len = 1;
    auto cont = [&](size_t k) {
      return i + k < s.size() && (static_cast<uint8_t>(s[i + k]) & 0xC0) == 0x80;
    };
    auto bits = [&](size_t k) {
      return static_cast<uint32_t>(static_cast<uint8_t>(s[i + k]) & 0x3F);
    };
    if (b0 < 0x80) {
      cp = b0;
    } else if (b0 >= 0xC2 && b0 < 0xE0 && cont(1)) {
      cp = ((b0 & 0x1Fu) << 6) | bits(1);
      len = 2;
    } else if (b0 >= 0xE0 && b0 < 0xF0 && cont(1) && cont(2)) {
      cp = ((b0 & 0x0Fu) << 12) | (bits(1) << 6) | bits(2);
      len = 3;
      if (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000)) {
        cp = 0xFFFD;  // overlong or a surrogate: not valid UTF-8
        len = 1;
      }
    } else if (b0 >= 0xF0 && b0 < 0xF5 && cont(1) && cont(2) && cont(3)) {
      cp = ((b0 & 0x07u) << 18) | (bits(1) << 12) | (bits(2) << 6) | bits(3);
      len = 4;
      if (cp < 0x10000 || cp > 0x10FFFF) {
        cp = 0xFFFD;
        len = 1;
      }
    }
    if (cp >= 0x10000) {  // a surrogate pair, as a Java String holds it
      cp -= 0x10000;
      unit(0xD800 + (cp >> 10));
      unit(0xDC00 + (cp & 0x3FF));
    } else {
      unit(cp);
    }
    i += len;
  }
  return static_cast<int32_t>(h);
}

int32_t partition_for_group(std::string_view group, int32_t partitions) {
  if (partitions <= 0) return 0;
  const int32_t h = java_string_hash(group);
  const int32_t a = h == std::numeric_limits<int32_t>::min() ? 0 : (h < 0 ? -h : h);
  return a % partitions;
}

}  // namespace strata::broker::group
