#include "pkindex/merge_engine.h"

#include <algorithm>

#include "pkindex/typed_row.h"

namespace strata::pkindex {

std::string_view change_kind_name(ChangeKind k) {
  switch (k) {
    case ChangeKind::insert:
      return "insert";
    case ChangeKind::update:
      return "update";
    case ChangeKind::del:
      return "delete";
    case ChangeKind::none:
      return "none";
  }
  return "none";
}

std::optional<ChangeKind> parse_change_kind(std::span<const uint8_t> name) {
  std::string_view s(reinterpret_cast<const char*>(name.data()), name.size());
  if (s == "insert") return ChangeKind::insert;
  if (s == "update") return ChangeKind::update;
  if (s == "delete") return ChangeKind::del;
  if (s == "none") return ChangeKind::none;
  return std::nullopt;
}

ChangeKind LastRowMerger::upsert(const std::optional<CurrentRow>& cur, const Write&) const {
  return cur ? ChangeKind::update : ChangeKind::insert;
}
ChangeKind LastRowMerger::remove(const CurrentRow&, const Write&) const { return ChangeKind::del; }

ChangeKind FirstRowMerger::upsert(const std::optional<CurrentRow>& cur, const Write&) const {
  return cur ? ChangeKind::none : ChangeKind::insert;
}
ChangeKind FirstRowMerger::remove(const CurrentRow&, const Write&) const { return ChangeKind::del; }

ChangeKind VersionedMerger::upsert(const std::optional<CurrentRow>& cur, const Write& w) const {
  if (!w.version) return ChangeKind::none;
  if (!cur) return ChangeKind::insert;
  if (cur->version && *w.version < *cur->version) return ChangeKind::none;
  return ChangeKind::update;
}
ChangeKind VersionedMerger::remove(const CurrentRow& cur, const Write& w) const {
  if (!w.version) return ChangeKind::none;
  if (cur.version && *w.version < *cur.version) return ChangeKind::none;
  return ChangeKind::del;
}

ChangeKind AggregationMerger::upsert(const std::optional<CurrentRow>& cur, const Write&) const {
  return cur ? ChangeKind::update : ChangeKind::insert;
}
ChangeKind AggregationMerger::remove(const CurrentRow&, const Write&) const {
  return ChangeKind::del;
}

std::unique_ptr<Merger> make_merger(MergeEngine engine) {
  switch (engine) {
    case MergeEngine::aggregation:
      return std::make_unique<AggregationMerger>();
    case MergeEngine::first_row:
      return std::make_unique<FirstRowMerger>();
    case MergeEngine::versioned:
      return std::make_unique<VersionedMerger>();
    case MergeEngine::last_row:
      break;
  }
  return std::make_unique<LastRowMerger>();
}

namespace {

// Typed tables: the row after an insert/update (d.kind) or an allowed delete (d.kind = del),
// or d rejected.
void typed_row_after(const TableConfig& table, const std::optional<CurrentRow>& cur, const Write& w,
                     Decision& d) {
  if (d.kind == ChangeKind::del && !w.columns) return;  // a whole-row delete: nothing to merge
  std::optional<nlohmann::json> cur_row;
  if (cur) {
    auto parsed = typed::parse_row(cur->value);
    if (!parsed.ok()) {  // stored by this table, so canonical: only a corrupt state gets here
      d.rejected = true;
      d.reason = "the stored row does not decode: " + parsed.status().message();
      return;
    }
    cur_row = std::move(*parsed);
  }
  if (d.kind == ChangeKind::del) {
    d.row = typed::partial_delete(std::move(*cur_row), *w.columns);
    if (d.row) d.kind = ChangeKind::update;
    return;
  }
  auto written = [&]() -> Result<nlohmann::json> {
    if (!w.parsed) return typed::parse_row(*w.value);
    // Decoded from a writer's schema: held to parse_row's limits, since the row it makes is
    // parsed again on every later write of the key.
    STRATA_RETURN_IF_ERROR(typed::check_row(*w.parsed));
    return std::move(*w.parsed);
  }();
  if (!written.ok()) {
    d.rejected = true;
    d.reason = written.status().message();
    return;
  }
  auto merged =
      typed::merge(table, std::move(cur_row), std::move(*written), w.columns, w.row_check);
  if (!merged.ok()) {
    d.rejected = true;
    d.reason = merged.status().message();
    return;
  }
  d.row = std::move(*merged);
}

}  // namespace

Decision decide(const TableConfig& table, const Merger& merger,
                const std::optional<CurrentRow>& cur, const Write& w) {
  Decision d;
  if (!w.value) {
    switch (table.delete_behavior) {
      case DeleteBehavior::disable:
        d.rejected = true;
        d.reason = "deletes are disabled on this table (table.delete.behavior=disable)";
        return d;
      case DeleteBehavior::ignore:
        d.kind = ChangeKind::none;
        return d;
      case DeleteBehavior::allow:
        d.kind = cur ? merger.remove(*cur, w) : ChangeKind::none;
        break;
    }
  } else {
    d.kind = merger.upsert(cur, w);
  }
  if (table.typed() && d.kind != ChangeKind::none) {
    typed_row_after(table, cur, w, d);
    if (d.rejected) return d;
  }
  if (d.kind == ChangeKind::update && cur) {
    const std::span<const uint8_t> after = d.after(w);
    const bool same_value =
        std::equal(cur->value.begin(), cur->value.end(), after.begin(), after.end());
    const bool same_version =
        table.merge_engine != MergeEngine::versioned || cur->version == w.version;
    if (same_value && same_version) d.kind = ChangeKind::none;
  }
  return d;
}

}  // namespace strata::pkindex
