// The RocksDB group store of earlier versions (<first log dir>/__strata_groups), read once at
// start for its migration into the consumer-offsets topic: its keys and values are the journal's
// records (group_records.h), so migrating is copying them.
#pragma once

#include <string>
#include <vector>

#include "broker/group/group_journal.h"
#include "protocol/base/result.h"

namespace strata::broker::group {

class LogGroupJournal;

// Every key and value of the store in `dir`, in key order. Fails when it cannot be opened.
Result<std::vector<JournalRecord>> read_legacy_group_store(const std::string& dir);

// A single node's start: when `dir` holds a store, copies its records into the journal's
// partitions (each group's into its own, fsynced) and renames it `<dir>.migrated`, so it is
// copied once (a crash before the rename copies the same records again, which is harmless: the
// newest record of a key wins).
Status migrate_legacy_group_store(const std::string& dir, LogGroupJournal& journal);

}  // namespace strata::broker::group
