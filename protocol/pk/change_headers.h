// Record headers the broker writes into the changelog (the partition log) of a primary-key table.
// Every header whose name starts with "strata." is reserved: a client-supplied one is rejected
// (INVALID_RECORD) so change kinds cannot be spoofed. Wire facts: consumers of the topic read them.
// Constants only.
#pragma once

#include <string_view>

namespace strata::protocol::pk {

inline constexpr std::string_view kReservedHeaderPrefix = "strata.";
// Value: "insert" | "update" | "delete" | "none".
inline constexpr std::string_view kChangeHeader = "strata.change";
// Value: the row before the write; only in table.changelog.image=full, on updates and deletes.
inline constexpr std::string_view kBeforeHeader = "strata.before";
// Value: int64 BE, the broker's append time in ms (the TTL clock); on every record of a table
// with table.kv.ttl.ms != -1, so replay reproduces each row's expiry.
inline constexpr std::string_view kAppendTimeHeader = "strata.append_time";

}  // namespace strata::protocol::pk
