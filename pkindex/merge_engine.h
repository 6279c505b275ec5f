// Merge engines of primary-key tables: given the key's current row (or none) and one incoming
// write, decide the change kind and hence the row after. The engines (last_row, first_row,
// versioned) are small classes; decide() wraps them with the table's delete behaviour and the
// byte-identical no-op suppression, so every caller gets one answer:
//   insert / update -> the row after is the written value (and version)
//   delete          -> the key is absent afterwards
//   none            -> the row is unchanged (ignored write, lower/missing version, identical bytes)
//   rejected        -> the record makes its whole batch fail (INVALID_RECORD)
// Owned by pkindex. Stateless, const objects; any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pkindex/table_config.h"

namespace strata::pkindex {

enum class ChangeKind : uint8_t { insert, update, del, none };
std::string_view change_kind_name(ChangeKind k);  // "insert", "update", "delete", "none"
std::optional<ChangeKind> parse_change_kind(std::span<const uint8_t> name);

struct CurrentRow {
  std::span<const uint8_t> value;
  std::optional<int64_t> version;  // versioned tables: the version the row was written with
};

struct Write {
  std::optional<std::span<const uint8_t>> value;      // nullopt = delete (null record value)
  std::optional<int64_t> version;                     // from the version header, when present
  const std::vector<std::string>* columns = nullptr;  // typed tables: strata.columns, if set
  // Typed tables: the written value already parsed (a confluent table's writer value, decoded
  // from its schema's encoding), which the merge takes instead of parsing `value`; moved from.
  nlohmann::json* parsed = nullptr;
  // Typed tables: a check of the merged row (typed::RowCheck, run by typed::merge), e.g.
  // against a confluent table's JSON Schema.
  const std::function<Status(const nlohmann::json&)>* row_check = nullptr;
};

struct Decision {
  ChangeKind kind = ChangeKind::none;
  bool rejected = false;
  std::string reason;  // when rejected
  // Typed tables, insert/update: the row after the write (canonical), which is not the written
  // value (a merge, or the value re-encoded). Raw tables: the written value is the row.
  std::optional<std::string> row;

  std::span<const uint8_t> after(const Write& w) const {
    if (!row) return *w.value;
    return {reinterpret_cast<const uint8_t*>(row->data()), row->size()};
  }
};

class Merger {
 public:
  virtual ~Merger() = default;
  // An upsert (w.value set) against `cur`.
  virtual ChangeKind upsert(const std::optional<CurrentRow>& cur, const Write& w) const = 0;
  // A delete allowed by the delete behaviour, against an existing row.
  virtual ChangeKind remove(const CurrentRow& cur, const Write& w) const = 0;
};

class LastRowMerger final : public Merger {
 public:
  ChangeKind upsert(const std::optional<CurrentRow>& cur, const Write& w) const override;
  ChangeKind remove(const CurrentRow& cur, const Write& w) const override;
};

class FirstRowMerger final : public Merger {
 public:
  ChangeKind upsert(const std::optional<CurrentRow>& cur, const Write& w) const override;
  ChangeKind remove(const CurrentRow& cur, const Write& w) const override;
};

// Missing version -> ignored; lower than the row's -> ignored; equal or higher -> applied (ties go
// to the new write).
class VersionedMerger final : public Merger {
 public:
  ChangeKind upsert(const std::optional<CurrentRow>& cur, const Write& w) const override;
  ChangeKind remove(const CurrentRow& cur, const Write& w) const override;
};

// Kinds as last_row; the row after is the per-column aggregation (typed_row.h).
class AggregationMerger final : public Merger {
 public:
  ChangeKind upsert(const std::optional<CurrentRow>& cur, const Write& w) const override;
  ChangeKind remove(const CurrentRow& cur, const Write& w) const override;
};

std::unique_ptr<Merger> make_merger(MergeEngine engine);

// The full decision for one write: delete behaviour (disable -> rejected, ignore -> none, allow ->
// the engine; deleting an absent key -> none), then the engine, then (typed tables) the row after
// the merge or partial delete, then byte-identical suppression (an update whose row and version
// equal the current row's -> none). A typed value that does not decode or fit -> rejected.
Decision decide(const TableConfig& table, const Merger& merger,
                const std::optional<CurrentRow>& cur, const Write& w);

}  // namespace strata::pkindex
