// Filters for filtered reads (ReadChangelog, ReadLog) written as a small SQL-like WHERE text, the
// same grammar as the Python client's (tools/python/strata_client/predicate.py):
//   expr    := term (OR term)*          term := factor (AND factor)*
//   factor  := ( expr ) | column op literal | column IS NULL
//   op      := = | < | <= | > | >=      literal := integer | decimal | 'string' | TRUE | FALSE
//   column  := [A-Za-z_][A-Za-z0-9_.]* | "quoted name"   ('' and "" escape quotes)
// Keywords in any case. Semantics are the broker's (docs/typed-tables.md, "Filtered reads").
// Pure function; any thread.
#pragma once

#include <string_view>

#include "protocol/base/result.h"
#include "protocol/ext/predicate.pb.h"

namespace strata::client {

// The Predicate of a WHERE text; Errc::invalid_argument naming what is wrong.
Result<ext::Predicate> parse_where(std::string_view text);

}  // namespace strata::client
