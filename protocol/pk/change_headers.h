// Record headers the broker writes into the changelog (the partition log) of a primary-key table.
// Every header whose name starts with "strata." is reserved: a client-supplied one is rejected
// (INVALID_RECORD) so change kinds cannot be spoofed. Wire facts: consumers of the topic read them.
// Constants only.
#pragma once

#include <string_view>

namespace strata::protocol::pk {

inline constexpr std::string_view kReservedHeaderPrefix = "strata.";
// The one reserved header a client may set, on typed tables only: the write's target columns,
// comma-separated (a partial update or partial delete of those columns; listed columns the value
// lacks are null). Consumed by the broker, never written to the changelog.
inline constexpr std::string_view kColumnsHeader = "strata.columns";
// Value: "insert" | "update" | "delete" | "none".
inline constexpr std::string_view kChangeHeader = "strata.change";
// Value: the row before the write; only in table.changelog.image=full, on updates and deletes.
inline constexpr std::string_view kBeforeHeader = "strata.before";
// Value: int64 BE, the row's TTL clock in ms; on every record of a table with
// table.kv.ttl.ms != -1, so replay reproduces each row's expiry. It is the broker's append time of
// the record, except on a `none` record, which leaves the row's clock as it was and carries it.
inline constexpr std::string_view kAppendTimeHeader = "strata.append_time";
// On a `none` record of a key whose row exists: the record carries the whole row (value = the row,
// this header = its version as int64 BE, or empty when the table is not versioned, and
// strata.append_time = its TTL clock), so that the newest record of every key in the log — which
// is all that log compaction keeps — is the row's truth, and replaying a compacted log rebuilds
// the table. Absent on `none` records of absent keys (value null) and on records of older brokers
// (replay skips those).
inline constexpr std::string_view kRowVersionHeader = "strata.row_version";

}  // namespace strata::protocol::pk
