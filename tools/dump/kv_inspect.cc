#include "tools/dump/kv_inspect.h"

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>

#include <algorithm>
#include <cstdarg>
#include <filesystem>
#include <memory>

#include "pkindex/row_format.h"

namespace strata::dump {
namespace rf = pkindex::row_format;
namespace fs = std::filesystem;

namespace {

// Discards RocksDB's info log: the default logger would create (and rotate) a LOG file inside
// the directory being inspected, and this tool never writes there.
class NullLogger final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

void add_file_sizes(const std::string& dir, KvReport& r) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    uint64_t size = e.file_size(ec);
    if (ec) continue;
    r.total_bytes += size;
    if (e.path().extension() == ".sst") {
      ++r.sst_files;
      r.sst_bytes += size;
    }
  }
}

}  // namespace

Result<KvReport> inspect_kv(const std::string& dir, size_t sample_rows) {
  KvReport r;
  r.path = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status(Errc::not_found, dir + " is not a directory");
  if (!fs::exists(fs::path(dir) / "CURRENT", ec)) {
    return Status(Errc::not_found, dir + " is not a RocksDB directory (no CURRENT file)");
  }
  add_file_sizes(dir, r);

  rocksdb::Options options;
  options.create_if_missing = false;
  options.info_log = std::make_shared<NullLogger>();
  options.max_open_files = 64;
  std::vector<std::string> cfs;
  rocksdb::Status st = rocksdb::DB::ListColumnFamilies(options, dir, &cfs);
  if (!st.ok())
    return Status(Errc::corruption, "list column families of " + dir + ": " + st.ToString());
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& name : cfs) descs.emplace_back(name, rocksdb::ColumnFamilyOptions(options));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  st = rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(options), dir, descs, &handles, &raw);
  if (!st.ok()) return Status(Errc::corruption, "open " + dir + " read-only: " + st.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  r.column_families = cfs;

  rocksdb::ColumnFamilyHandle* def = nullptr;
  for (auto* h : handles) {
    if (h->GetName() == rocksdb::kDefaultColumnFamilyName) def = h;
  }
  auto release = [&] {
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
    handles.clear();
  };
  if (def == nullptr) {
    release();
    return Status(Errc::corruption, dir + ": no default column family");
  }
  db->GetIntProperty(def, "rocksdb.estimate-num-keys", &r.estimated_keys);

  std::string applied;
  st = db->Get(rocksdb::ReadOptions(), def,
               rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()), &applied);
  if (st.ok()) {
    if (applied.size() == 8) {
      r.applied_offset = rf::get_be64(reinterpret_cast<const uint8_t*>(applied.data()));
    } else {
      r.applied_malformed = true;
      r.problems.push_back("m.applied holds " + std::to_string(applied.size()) +
                           " bytes, expected 8");
    }
  } else if (!st.IsNotFound()) {
    release();
    return Status(Errc::corruption, dir + ": read m.applied: " + st.ToString());
  }

  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  ro.verify_checksums = true;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro, def));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rocksdb::Slice k = it->key();
    rocksdb::Slice v = it->value();
    r.key_bytes += k.size();
    r.value_bytes += v.size();
    if (k.size() >= 1 && k[0] == rf::kRowPrefix) {
      ++r.rows;
      auto row = rf::decode_row(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(v.data()), v.size()));
      if (!row) ++r.malformed_rows;
      if (row) {
        r.max_row_offset = std::max(r.max_row_offset, row->offset);
        if (r.applied_offset && row->offset > *r.applied_offset) ++r.rows_after_applied;
      }
      if (r.first_rows.size() < sample_rows) {
        KvRowSample s;
        s.key.assign(k.data() + 1, k.size() - 1);
        if (row) {
          s.offset = row->offset;
          s.timestamp = row->timestamp;
          s.version = row->version;
          s.append_time = row->append_time;
          s.value.assign(reinterpret_cast<const char*>(row->value.data()), row->value.size());
        } else {
          s.malformed = true;
          s.value.assign(v.data(), v.size());
        }
        r.first_rows.push_back(std::move(s));
      }
    } else if (k != rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size())) {
      ++r.other_keys;
    }
  }
  st = it->status();
  it.reset();
  release();
  if (!st.ok()) return Status(Errc::corruption, dir + ": iterate: " + st.ToString());
  if (r.malformed_rows > 0) {
    r.problems.push_back(std::to_string(r.malformed_rows) + " row values do not decode");
  }
  if (r.rows_after_applied > 0) {
    r.problems.push_back(std::to_string(r.rows_after_applied) +
                         " rows were changed at offsets after the applied offset " +
                         std::to_string(*r.applied_offset) + " (state ahead of its own marker)");
  }
  if (!r.applied_offset && r.rows > 0) {
    r.problems.push_back("rows present but no m.applied key");
  }
  return r;
}

}  // namespace strata::dump
