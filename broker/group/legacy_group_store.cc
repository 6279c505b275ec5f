#include "broker/group/legacy_group_store.h"

#include <rocksdb/db.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <memory>

#include "broker/group/log_group_journal.h"

namespace strata::broker::group {

Result<std::vector<JournalRecord>> read_legacy_group_store(const std::string& dir) {
  rocksdb::Options opts;
  opts.create_if_missing = false;
  opts.max_open_files = 64;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenForReadOnly(opts, dir, &raw);
  if (!s.ok()) return Status(Errc::io_error, "group store " + dir + ": " + s.ToString());
  std::unique_ptr<rocksdb::DB> db(raw);
  std::vector<JournalRecord> out;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.push_back({it->key().ToString(), it->value().ToString()});
  }
  if (!it->status().ok()) {
    return Status(Errc::corruption, "group store " + dir + ": " + it->status().ToString());
  }
  return out;
}

Status migrate_legacy_group_store(const std::string& dir, LogGroupJournal& journal) {
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/CURRENT", ec)) return Status::Ok();
  auto recs = read_legacy_group_store(dir);
  if (!recs.ok()) return recs.status();
  STRATA_RETURN_IF_ERROR(journal.import_records(*recs));
  std::filesystem::rename(dir, dir + ".migrated", ec);
  if (ec) return Status(Errc::io_error, "renaming " + dir + ": " + ec.message());
  spdlog::info("migrated {} group records from {} into {} (the old store is now {}.migrated)",
               recs->size(), dir, kOffsetsTopic, dir);
  return Status::Ok();
}

}  // namespace strata::broker::group
