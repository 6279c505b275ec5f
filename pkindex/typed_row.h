// Typed rows (table.value.format=json): a row is a JSON object, column name -> value, stored and
// logged in canonical text (keys sorted, no spaces), so equal rows are equal bytes (no-op
// suppression) and replay needs no merge. A write names its target columns (the value's fields,
// or the strata.columns header); only those change: replaced (last_row), aggregated per column
// (aggregation), or nulled (a partial delete). A column present with null differs from an absent
// one: first_value keeps a first null. Semantics: docs/typed-tables.md. Owned by pkindex. Pure
// functions; any thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pkindex/table_config.h"
#include "protocol/base/result.h"

namespace strata::pkindex::typed {

// A record value of a typed table: a JSON object (anything else -> invalid_argument, the reason).
Result<nlohmann::json> parse_row(std::span<const uint8_t> value);
// The checks parse_row makes, on a value already parsed (a confluent writer's, decoded from its
// schema's encoding): an object nested at most as deep as parse_row allows.
Status check_row(const nlohmann::json& row);
std::string canonical(const nlohmann::json& row);

// The strata.columns header's value: comma-separated, non-empty, distinct column names.
Result<std::vector<std::string>> parse_columns(std::string_view header);

// The row after an upsert of `write` onto `cur` (null: the key has no row), canonical text:
//   last_row    - the current row with each target column replaced;
//   aggregation - each target column aggregated with its function (docs/typed-tables.md);
//   first_row, versioned - the written row (target columns only when `columns` is given).
// Targets: `columns` when given (a listed column the value lacks is null), else the value's
// fields. A value of the wrong type for its column's function -> invalid_argument naming it.
// Both rows are consumed (moved from): this runs for every record of a typed table.
// `check`, when given, is run on the row after before it is made text (a confluent table's
// JSON Schema, ConfluentDecoder::check_row): its error rejects the write.
using RowCheck = std::function<Status(const nlohmann::json& row)>;
Result<std::string> merge(const TableConfig& table, std::optional<nlohmann::json> cur,
                          nlohmann::json write, const std::vector<std::string>* columns,
                          const RowCheck* check = nullptr);

// A partial delete of `columns` from `cur`: those columns become null; nullopt when every column
// of the row is then null (the row is deleted).
std::optional<std::string> partial_delete(nlohmann::json cur,
                                          const std::vector<std::string>& columns);

// A column projection, prepared once per request: apply() gives the listed columns of a stored
// (canonical) row, canonical; a column the row lacks is null, so every answer has the shape
// asked for. A row that does not decode comes back unchanged.
class Projection {
 public:
  explicit Projection(std::vector<std::string> columns);
  std::string apply(std::string_view row) const;

 private:
  std::vector<std::string> columns_;  // sorted, distinct
  bool plain_ = true;                 // no name needs escaping: the splice path may be used
};

}  // namespace strata::pkindex::typed
