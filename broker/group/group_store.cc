#include "broker/group/group_store.h"

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstring>

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

std::string group_key(const std::string& g) { return "g" + g; }

std::string offset_prefix(const std::string& g) {
  std::string k = "o";
  put_u16(k, static_cast<uint16_t>(g.size()));
  k += g;
  return k;
}

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

Status from_rocks(const rocksdb::Status& s, const char* what) {
  if (s.ok()) return Status::Ok();
  return Status(s.IsCorruption() ? Errc::corruption : Errc::io_error,
                std::string("group store ") + what + ": " + s.ToString());
}

}  // namespace

std::string GroupStore::encode_group(const Group& g) {
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

bool GroupStore::decode_group(std::string_view data, Group& g) {
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

GroupStore::GroupStore(std::unique_ptr<rocksdb::DB> db, bool sync)
    : db_(std::move(db)), sync_(sync) {}

GroupStore::~GroupStore() { close(); }

void GroupStore::close() {
  if (db_) {
    (void)db_->Close();
    db_.reset();
  }
}

Result<std::unique_ptr<GroupStore>> GroupStore::open(const std::string& dir, bool sync) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  opts.max_open_files = 64;
  opts.keep_log_file_num = 2;
  opts.write_buffer_size = 4 << 20;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(opts, dir, &raw);
  if (!s.ok()) return from_rocks(s, "open");
  return std::unique_ptr<GroupStore>(new GroupStore(std::unique_ptr<rocksdb::DB>(raw), sync));
}

Status GroupStore::load(std::map<std::string, Group>& out) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string_view k(it->key().data(), it->key().size());
    std::string_view v(it->value().data(), it->value().size());
    if (k.empty()) continue;
    if (k[0] == 'g') {
      std::string id(k.substr(1));
      Group& g = out[id];
      auto offsets = std::move(g.offsets);
      g = Group{};
      g.id = id;
      g.offsets = std::move(offsets);
      if (!decode_group(v, g)) {
        return Status(Errc::corruption, "group store: bad record for group '" + id + "'");
      }
    } else if (k[0] == 'o') {
      OffsetKey ok;
      OffsetEntry e;
      if (!decode_offset_key(k, ok) || !decode_offset(v, e)) {
        return Status(Errc::corruption, "group store: bad offset record");
      }
      Group& g = out[ok.group];
      g.id = ok.group;
      g.offsets[{ok.topic, ok.partition}] = std::move(e);
    }
  }
  return from_rocks(it->status(), "load");
}

Status GroupStore::write(void* batch) {
  rocksdb::WriteOptions wo;
  wo.sync = sync_;
  return from_rocks(db_->Write(wo, static_cast<rocksdb::WriteBatch*>(batch)), "write");
}

Status GroupStore::put_offsets(const std::string& group,
                               const std::vector<std::pair<OffsetKey, OffsetEntry>>& offsets) {
  (void)group;
  rocksdb::WriteBatch b;
  for (const auto& [k, e] : offsets) b.Put(offset_key(k), encode_offset(e));
  return write(&b);
}

Status GroupStore::delete_offsets(const std::vector<OffsetKey>& keys) {
  if (keys.empty()) return Status::Ok();
  rocksdb::WriteBatch b;
  for (const auto& k : keys) b.Delete(offset_key(k));
  return write(&b);
}

Status GroupStore::put_group(const Group& g) {
  rocksdb::WriteBatch b;
  b.Put(group_key(g.id), encode_group(g));
  return write(&b);
}

Status GroupStore::delete_group(const Group& g) {
  rocksdb::WriteBatch b;
  b.Delete(group_key(g.id));
  for (const auto& [tp, e] : g.offsets) b.Delete(offset_key({g.id, tp.first, tp.second}));
  return write(&b);
}

}  // namespace strata::broker::group
