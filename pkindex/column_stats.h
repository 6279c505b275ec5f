// Column statistics of typed tables (table.statistics.columns, as Fluss's): per changelog batch,
// min / max / null count of the chosen columns over the batch's rows, computed as the batch is
// appended and kept in the segment's side index (storage/batch_summary.h). A filtered read
// (ReadChangelog with a predicate) skips the batches whose summary says no row can match, and
// filters the rows of the others. Semantics (docs/typed-tables.md, "Filtered reads"):
//  - a change's row is its after-image (insert, update) or, for a delete, its before-image; a
//    delete without a before-image (table.changelog.image=wal) or an image that does not
//    decode has no known row: it always passes a filter, and its batch is never skipped;
//  - SQL comparisons: a null or absent column, or a value of another type than the literal
//    (string vs number), compares as unknown, which does not match; numbers compare by value
//    (integers exactly); strings bytewise; false < true. IS NULL matches null and absent.
//  - no false skips: ranges are conservative (numbers rounded to double, monotone; long strings
//    cut to a prefix of the least value, the greatest value's bound then dropped).
// Owned by pkindex. Pure functions and value types; any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "pkindex/changelog_decode.h"
#include "pkindex/confluent_values.h"
#include "pkindex/table_config.h"
#include "protocol/base/result.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"
#include "storage/batch_summary.h"

namespace strata::pkindex::stats {

// The columns a table summarises: table.statistics.columns = "*" (every column) or a
// comma-separated list of distinct names. Empty list = none (the key unset).
struct Columns {
  bool all = false;
  std::vector<std::string> names;  // sorted
  bool any() const { return all || !names.empty(); }
};
Result<Columns> parse_columns(std::string_view value);  // invalid_argument with the reason

// Longest string kept as a bound (longer least values are cut to a prefix).
inline constexpr size_t kMaxStringBound = 64;
// Columns one summary of a `*` table keeps (rows naming more: the rest go unsummarised).
inline constexpr size_t kMaxSummaryColumns = 256;

// What a batch's rows are: the changes of a PK table's changelog (rows as above), or the records
// of a typed log topic (a row is the record's value; a null value has no known row).
enum class Rows : uint8_t { changes, records };

// The summary of one batch (the side-index payload); nullopt for a batch with no row (a control
// batch, only `none` records). Errors are the record reader's (a corrupt batch): callers keep no
// summary then.
// `writers` decodes a confluent log topic's record values (each by its writer's schema id, with
// the schemas this broker holds: summaries are made under the partition's append lock); a value
// it cannot decode so (the registry not serving yet, a schema not fetched yet) is a row of
// unknown columns.
Result<std::optional<std::string>> summarize(protocol::RecordReader& reader,
                                             const protocol::RecordBatchView& batch,
                                             const TableConfig& table, const Columns& columns,
                                             Rows rows = Rows::changes,
                                             const ConfluentDecoder* writers = nullptr);

// The partition log's summarizer for a table with table.statistics.columns (null without):
// summarize() of each appended batch; a batch that does not decode gets no summary.
std::shared_ptr<const storage::BatchSummarizer> make_summarizer(
    const TableConfig& table, Rows rows = Rows::changes,
    std::shared_ptr<const ConfluentDecoder> writers = nullptr);

// A typed log topic's produce check: every record value is a JSON object or null. The records
// that are not, by index in the batch, with the reason; a batch that does not decode ->
// Errc::corruption.
Result<std::vector<std::pair<int32_t, std::string>>> invalid_json_values(
    protocol::RecordReader& reader, const protocol::RecordBatchView& batch);
// A confluent log topic's produce check: every record value (null aside) decodes by its writer's
// schema into columns of the table schema. The first record that does not, with the decoder's
// reason (the batch fails as a whole); Errc::unavailable when the registry cannot be read (the
// producer retries).
Result<std::vector<std::pair<int32_t, std::string>>> invalid_confluent_values(
    protocol::RecordReader& reader, const protocol::RecordBatchView& batch,
    const ConfluentDecoder& writers);

// A predicate over a row's columns.
struct Predicate {
  enum class Op : uint8_t { eq, lt, le, gt, ge, is_null, and_, or_ };
  Op op = Op::eq;
  std::string column;                                        // comparisons, is_null
  std::variant<int64_t, double, std::string, bool> literal;  // comparisons
  std::vector<Predicate> operands;                           // and_, or_ (at least one)
};
// Bounds on a predicate from a request.
inline constexpr int kMaxPredicateDepth = 16;
inline constexpr int kMaxPredicateNodes = 256;
// Checks shape and bounds (depth, nodes, a column name on leaves, operands on and/or, no NaN):
// empty when fine, else the reason.
std::string check(const Predicate& p);

// Whether a row (a decoded JSON object) satisfies `p`.
bool matches(const Predicate& p, const nlohmann::json& row);
// Whether any row of a batch with this summary may satisfy `p` (false = skip the batch). An
// undecodable summary may match.
bool may_match(const Predicate& p, std::string_view summary);

// The row of an image (a logged value), parsed; nullopt when there is none or it does not decode.
// With `writers`, the image is a confluent log topic's record value (see summarize).
std::optional<nlohmann::json> image_row(std::optional<std::span<const uint8_t>> image,
                                        const TableConfig& table,
                                        const ConfluentDecoder* writers = nullptr);
// The row a change is filtered on (see above); nullopt when it has none (always passes).
std::optional<nlohmann::json> change_row(const ChangeView& change, const TableConfig& table);

// A change (a log record's value) passes `p` when its row satisfies it or it has no known row.
bool passes(const Predicate& p, const ChangeView& change, const TableConfig& table);
bool passes(const Predicate& p, std::optional<std::span<const uint8_t>> value,
            const TableConfig& table, const ConfluentDecoder* writers = nullptr);

}  // namespace strata::pkindex::stats
