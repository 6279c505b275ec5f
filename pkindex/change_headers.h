// Record headers the broker writes into the changelog (the partition log) of a primary-key table.
// Every header whose name starts with "strata." is reserved: a client-supplied one is rejected
// (INVALID_RECORD) so change kinds cannot be spoofed. Owned by pkindex (issue 5). Constants only.
#pragma once

#include <string_view>

namespace strata::pkindex {

inline constexpr std::string_view kReservedHeaderPrefix = "strata.";
// Value: "insert" | "update" | "delete" | "none".
inline constexpr std::string_view kChangeHeader = "strata.change";
// Value: the row before the write; only in table.changelog.image=full, on updates and deletes.
inline constexpr std::string_view kBeforeHeader = "strata.before";

}  // namespace strata::pkindex
