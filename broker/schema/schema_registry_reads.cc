// SchemaRegistry's reads (from memory, under the shared lock); see schema_registry.h.
#include <algorithm>

#include "broker/schema/registry_records.h"
#include "broker/schema/schema_registry.h"

namespace strata::broker::schema {

using namespace detail;

const SubjectVersion* SchemaRegistry::find_version_locked(const std::string& subject,
                                                          const std::string& v,
                                                          bool include_deleted,
                                                          RegistryError& e) const {
  auto s = subjects_.find(subject);
  bool any = false;
  if (s != subjects_.end()) {
    for (const auto& [n, ver] : s->second.versions) any |= include_deleted || !ver.deleted;
  }
  if (!any) {
    e = subject_not_found(subject);
    return nullptr;
  }
  if (v == "latest" || v == "-1") {
    for (auto it = s->second.versions.rbegin(); it != s->second.versions.rend(); ++it) {
      if (include_deleted || !it->second.deleted) return &it->second;
    }
  }
  auto n = parse_int(v);
  if (!n || *n <= 0) {
    e = err(422, 42202,
            "The specified version '" + v +
                "' is not a valid version id. Allowed values are between [1, 2^31-1] and the "
                "string \"latest\"");
    return nullptr;
  }
  auto it = s->second.versions.find(*n);
  if (it == s->second.versions.end() || (!include_deleted && it->second.deleted)) {
    e = err(404, 40402, "Version " + v + " not found.");
    return nullptr;
  }
  return &it->second;
}

std::vector<std::string> SchemaRegistry::subjects(bool include_deleted) const {
  std::shared_lock lk(mu_);
  std::vector<std::string> out;
  for (const auto& [name, s] : subjects_) {
    bool any = false;
    for (const auto& [n, ver] : s.versions) any |= include_deleted || !ver.deleted;
    if (any) out.push_back(name);
  }
  return out;
}

Answer<std::vector<int32_t>> SchemaRegistry::versions(const std::string& subject,
                                                      bool include_deleted) const {
  std::shared_lock lk(mu_);
  std::vector<int32_t> out;
  if (auto s = subjects_.find(subject); s != subjects_.end()) {
    for (const auto& [n, ver] : s->second.versions) {
      if (include_deleted || !ver.deleted) out.push_back(n);
    }
  }
  if (out.empty()) {
    return fail<std::vector<int32_t>>(subject_not_found(subject));
  }
  return okay(std::move(out));
}

Answer<std::pair<SubjectVersion, SchemaEntry>> SchemaRegistry::version(const std::string& subject,
                                                                       const std::string& v,
                                                                       bool include_deleted) const {
  std::shared_lock lk(mu_);
  RegistryError e;
  const SubjectVersion* sv = find_version_locked(subject, v, include_deleted, e);
  if (!sv) return fail<std::pair<SubjectVersion, SchemaEntry>>(e);
  return okay(std::make_pair(*sv, by_id_.at(sv->id)));
}

Answer<std::pair<SubjectVersion, SchemaEntry>> SchemaRegistry::lookup(const std::string& subject,
                                                                      const RegisterRequest& req,
                                                                      bool include_deleted) const {
  using Out = std::pair<SubjectVersion, SchemaEntry>;
  std::shared_lock lk(mu_);
  auto s = subjects_.find(subject);
  if (s == subjects_.end() || s->second.versions.empty()) {
    return fail<Out>(subject_not_found(subject));
  }
  auto normalized = validate_locked(req);
  if (!normalized.ok()) return fail<Out>(normalized.error);
  for (auto it = s->second.versions.rbegin(); it != s->second.versions.rend(); ++it) {
    if (it->second.deleted && !include_deleted) continue;
    const SchemaEntry& e = by_id_.at(it->second.id);
    if (e.type == req.type && e.schema == *normalized.value &&
        same_refs(e.references, req.references)) {
      return okay(std::make_pair(it->second, e));
    }
  }
  return fail<Out>(err(404, 40403, "Schema not found"));
}

std::vector<int32_t> SchemaRegistry::referencing_ids_locked(const std::string& subject,
                                                            int32_t version) const {
  std::vector<int32_t> out;
  auto target = subjects_.find(subject);
  const bool newest = target != subjects_.end() && !target->second.versions.empty() &&
                      std::prev(target->second.versions.end())->first == version;
  for (const auto& [name, s] : subjects_) {
    for (const auto& [n, ver] : s.versions) {
      if (ver.deleted) continue;
      const SchemaEntry& e = by_id_.at(ver.id);
      for (const auto& ref : e.references) {
        if (ref.subject == subject && (ref.version == version || (ref.version == -1 && newest))) {
          out.push_back(ver.id);
          break;
        }
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Answer<std::vector<int32_t>> SchemaRegistry::referenced_by(const std::string& subject,
                                                           const std::string& version) const {
  std::shared_lock lk(mu_);
  RegistryError e;
  const SubjectVersion* sv = find_version_locked(subject, version, false, e);
  if (!sv) return fail<std::vector<int32_t>>(e);
  return okay(referencing_ids_locked(subject, sv->version));
}

Answer<SchemaEntry> SchemaRegistry::schema_by_id(int32_t id) const {
  std::shared_lock lk(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return fail<SchemaEntry>(err(404, 40403, "Schema not found"));
  return okay(it->second);
}

Answer<std::vector<SubjectVersion>> SchemaRegistry::versions_of_id(int32_t id, bool deleted) const {
  std::shared_lock lk(mu_);
  std::vector<SubjectVersion> out;
  for (const auto& [name, s] : subjects_) {
    for (const auto& [n, ver] : s.versions) {
      if (ver.id == id && (deleted || !ver.deleted)) out.push_back(ver);
    }
  }
  if (!by_id_.count(id)) {
    return fail<std::vector<SubjectVersion>>(err(404, 40403, "Schema not found"));
  }
  return okay(std::move(out));
}

Answer<Compatibility> SchemaRegistry::compatibility(const std::optional<std::string>& subject,
                                                    bool default_to_global) const {
  std::shared_lock lk(mu_);
  if (!subject) return okay(global_level_);
  auto s = subjects_.find(*subject);
  if (s != subjects_.end() && s->second.compatibility) return okay(*s->second.compatibility);
  if (default_to_global) return okay(global_level_);
  return fail<Compatibility>(
      err(404, 40408,
          "Subject '" + *subject + "' does not have subject-level compatibility configured"));
}

Answer<Mode> SchemaRegistry::mode(const std::optional<std::string>& subject) const {
  std::shared_lock lk(mu_);
  if (!subject) return okay(global_mode_);
  return okay(mode_locked(*subject));
}

Answer<std::vector<std::string>> SchemaRegistry::check_compatibility(
    const std::string& subject, const std::string& v, const RegisterRequest& req) const {
  using Out = std::vector<std::string>;
  std::shared_lock lk(mu_);
  auto normalized = validate_locked(req);
  if (!normalized.ok()) return fail<Out>(normalized.error);
  std::vector<int32_t> against;
  const Compatibility level = level_locked(subject);
  auto s = subjects_.find(subject);
  const bool transitive_all =
      (v == "latest" || v == "-1") &&
      (level == Compatibility::backward_transitive || level == Compatibility::forward_transitive ||
       level == Compatibility::full_transitive);
  if (transitive_all && s != subjects_.end()) {
    for (const auto& [n, ver] : s->second.versions) {
      if (!ver.deleted) against.push_back(n);
    }
  } else {
    RegistryError e;
    const SubjectVersion* sv = find_version_locked(subject, v, false, e);
    if (!sv) return fail<Out>(e);
    against.push_back(sv->version);
  }
  return okay(incompatibilities_locked(subject, *normalized.value, req, level, against));
}

}  // namespace strata::broker::schema
