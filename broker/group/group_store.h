// GroupStore: the durable half of the group coordinator — one small RocksDB database in
// `<first log dir>/__strata_groups/` holding committed offsets and group metadata. Every write is
// synced (WriteOptions::sync) before the coordinator acknowledges it. Owned by GroupCoordinator;
// thread-safe (RocksDB is), but the coordinator calls it under its own lock so writes to one group
// are ordered.
//
// Key layout (all integers big-endian):
//   'g' <group bytes>                                      -> group record
//   'o' <u16 group len> <group> <u16 topic len> <topic> <i32 partition> -> offset record
// Offset record: u8 version(=1) i64 offset, i32 leader epoch, i64 commit ms, i64 expire ms,
//                u32 metadata len, metadata bytes.
// Group record:  u8 version(=1), i32 generation, opt-string protocol type, opt-string protocol
//                name, opt-string leader, i64 empty-since ms, u32 member count, then per member:
//                string id, opt-string instance id, string client id, string client host,
//                i32 session timeout, i32 rebalance timeout, string protocol type,
//                u32 protocol count x (string name, bytes metadata), bytes assignment.
//                (string/bytes = u32 length + data; opt-string = u8 present + string)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "broker/group/group.h"
#include "protocol/base/result.h"

namespace rocksdb {
class DB;
}

namespace strata::broker::group {

struct OffsetKey {
  std::string group;
  std::string topic;
  int32_t partition = 0;
};

class GroupStore {
 public:
  // Opens (creating) the database in `dir`. `sync` = fsync every write (the default; tests that
  // measure the cost turn it off).
  static Result<std::unique_ptr<GroupStore>> open(const std::string& dir, bool sync = true);
  ~GroupStore();

  // Loads every group (metadata and offsets) into `out`; states are Empty or Stable, no timers.
  Status load(std::map<std::string, Group>& out);

  Status put_offsets(const std::string& group,
                     const std::vector<std::pair<OffsetKey, OffsetEntry>>& offsets);
  Status delete_offsets(const std::vector<OffsetKey>& keys);
  Status put_group(const Group& g);
  // Deletes the group record and every offset of the group.
  Status delete_group(const Group& g);
  void close();

  static std::string encode_group(const Group& g);
  static bool decode_group(std::string_view data, Group& g);

 private:
  GroupStore(std::unique_ptr<rocksdb::DB> db, bool sync);
  Status write(void* batch);

  std::unique_ptr<rocksdb::DB> db_;
  bool sync_;
};

}  // namespace strata::broker::group
