// SchemaRegistry's operations: validation, compatibility, register/lookup/delete, config, mode
// and reads; see schema_registry.h. Confluent's answers and error codes throughout.
#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>

#include "broker/schema/registry_parse.h"
#include "broker/schema/registry_records.h"
#include "broker/schema/schema_registry.h"
#include "protocol/schema/avro_schema.h"
#include "protocol/schema/json_schema.h"

namespace strata::broker::schema {

using protocol::schema::AvroSchema;
using protocol::schema::JsonSchema;
using protocol::schema::ProtobufSchema;

using namespace detail;

namespace {

RegistryError read_only(const std::string& s) {
  return err(422, 42205, "Subject " + s + " is in read-only mode");
}
RegistryError referenced(const std::string& s, int32_t v, const std::vector<int32_t>& ids) {
  std::string list;
  for (int32_t id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return err(422, 42206,
             "One or more references exist to the schema {subject=" + s +
                 ", version=" + std::to_string(v) + "}: schema ids [" + list + "]");
}

bool is_transitive(Compatibility c) {
  return c == Compatibility::backward_transitive || c == Compatibility::forward_transitive ||
         c == Compatibility::full_transitive;
}

}  // namespace

std::string detail::ParsedSchema::normalized() const {
  if (avro) return avro->normalized_json();
  return protobuf ? protobuf->normalized() : json->normalized_json();
}

std::vector<std::string> detail::incompatibilities(const ParsedSchema& reader,
                                                   const ParsedSchema& writer) {
  if (reader.avro) return protocol::schema::avro_incompatibilities(*reader.avro, *writer.avro);
  if (reader.protobuf) {
    return protocol::schema::protobuf_schema_incompatibilities(*reader.protobuf, *writer.protobuf);
  }
  return protocol::schema::json_schema_incompatibilities(*reader.json, *writer.json);
}

Result<detail::ParsedSchema> detail::SchemaParser::parse(const std::string& type,
                                                         const std::string& text,
                                                         const std::vector<SchemaReference>& refs,
                                                         int depth) const {
  if (depth > 32) return Status(Errc::invalid_argument, "schema references nest too deep");
  std::vector<ParsedSchema> parsed;
  parsed.reserve(refs.size());
  for (const auto& ref : refs) {
    const SchemaEntry* e = find(ref);
    if (!e) {
      return Status(Errc::invalid_argument, "reference " + ref.name + " (subject " + ref.subject +
                                                " version " + std::to_string(ref.version) +
                                                ") not found");
    }
    if (e->type != type) {
      return Status(Errc::invalid_argument,
                    "reference " + ref.name + " is a " + e->type + " schema, not " + type);
    }
    auto p = parse(e->type, e->schema, e->references, depth + 1);
    if (!p.ok()) return p.status();
    parsed.push_back(std::move(*p));
  }
  ParsedSchema out;
  if (type == "AVRO") {
    std::vector<const AvroSchema*> ptrs;
    for (const auto& p : parsed) ptrs.push_back(&*p.avro);
    auto a = AvroSchema::parse(text, ptrs);
    if (!a.ok()) return a.status();
    out.avro = std::move(*a);
  } else if (type == "PROTOBUF") {
    std::vector<ProtobufSchema::Reference> named;
    for (size_t i = 0; i < parsed.size(); ++i)
      named.emplace_back(refs[i].name, &*parsed[i].protobuf);
    auto p = ProtobufSchema::parse(text, named);
    if (!p.ok()) return p.status();
    out.protobuf = std::move(*p);
  } else {
    std::vector<JsonSchema::Reference> named;
    for (size_t i = 0; i < parsed.size(); ++i) named.emplace_back(refs[i].name, &*parsed[i].json);
    auto j = JsonSchema::parse(text, named);
    if (!j.ok()) return j.status();
    out.json = std::move(*j);
  }
  return out;
}

const SchemaEntry* SchemaRegistry::find_reference_locked(const SchemaReference& ref) const {
  auto s = subjects_.find(ref.subject);
  if (s == subjects_.end()) return nullptr;
  auto v = ref.version == -1 && !s->second.versions.empty() ? std::prev(s->second.versions.end())
                                                            : s->second.versions.find(ref.version);
  if (v == s->second.versions.end()) return nullptr;
  auto e = by_id_.find(v->second.id);
  return e == by_id_.end() ? nullptr : &e->second;
}

Answer<std::string> SchemaRegistry::validate_locked(const RegisterRequest& req) const {
  const auto known = types();
  if (std::find(known.begin(), known.end(), req.type) == known.end()) {
    return fail<std::string>(err(422, 42201,
                                 "Invalid schema: unsupported schema type " + req.type +
                                     " (GET /schemas/types lists the accepted ones)"));
  }
  const std::function<const SchemaEntry*(const SchemaReference&)> find =
      [this](const SchemaReference& ref) { return find_reference_locked(ref); };
  auto parsed = SchemaParser{find}.parse(req.type, req.schema, req.references, 0);
  if (!parsed.ok()) {
    return fail<std::string>(err(422, 42201, "Invalid schema: " + parsed.status().message()));
  }
  return okay(parsed->normalized());
}

std::vector<std::string> SchemaRegistry::incompatibilities_locked(
    const std::string& subject, const std::string& schema, const RegisterRequest& req,
    Compatibility level, const std::vector<int32_t>& against) const {
  std::vector<std::string> reasons;
  if (level == Compatibility::none || against.empty()) return reasons;
  const std::function<const SchemaEntry*(const SchemaReference&)> find =
      [this](const SchemaReference& ref) { return find_reference_locked(ref); };
  const SchemaParser parser{find};
  auto mine = parser.parse(req.type, schema, req.references, 0);
  if (!mine.ok()) return {mine.status().message()};
  const bool backward =
      level != Compatibility::forward && level != Compatibility::forward_transitive;
  const bool forward =
      level != Compatibility::backward && level != Compatibility::backward_transitive;
  const auto& versions = subjects_.at(subject).versions;
  for (int32_t v : against) {
    const SchemaEntry& e = by_id_.at(versions.at(v).id);
    if (e.type != req.type) {
      reasons.push_back("version " + std::to_string(v) + " is of type " + e.type);
      continue;
    }
    auto old = parser.parse(e.type, e.schema, e.references, 0);
    if (!old.ok()) {
      reasons.push_back("version " + std::to_string(v) + ": " + old.status().message());
      continue;
    }
    if (backward) {  // the new schema reads what the old one wrote
      for (auto& r : incompatibilities(*mine, *old)) {
        reasons.push_back("reading version " + std::to_string(v) + "'s data: " + r);
      }
    }
    if (forward) {  // the old schema reads what the new one writes
      for (auto& r : incompatibilities(*old, *mine)) {
        reasons.push_back("version " + std::to_string(v) + " reading new data: " + r);
      }
    }
  }
  return reasons;
}

Answer<int32_t> SchemaRegistry::register_schema(const std::string& subject,
                                                const RegisterRequest& req) {
  std::lock_guard wl(write_mu_);
  if (auto e = refresh_locked()) return fail<int32_t>(*e);
  SubjectVersion sv;
  SchemaEntry entry;
  {
    std::shared_lock lk(mu_);
    const Mode mode = mode_locked(subject);
    if (mode == Mode::readonly) return fail<int32_t>(read_only(subject));
    if ((req.id || req.version) && mode != Mode::import_) {
      return fail<int32_t>(err(422, 42205,
                               "Subject " + subject +
                                   " is not in import mode: ids and versions "
                                   "are assigned by the registry"));
    }
    auto normalized = validate_locked(req);
    if (!normalized.ok()) return fail<int32_t>(normalized.error);
    entry.type = req.type;
    entry.schema = *normalized.value;
    entry.references = req.references;
    std::vector<int32_t> live;
    int32_t max_version = 0;
    if (auto s = subjects_.find(subject); s != subjects_.end()) {
      for (const auto& [v, ver] : s->second.versions) {
        max_version = std::max(max_version, v);
        if (ver.deleted) continue;
        const SchemaEntry& e = by_id_.at(ver.id);
        if (e.type == entry.type && e.schema == entry.schema &&
            same_refs(e.references, entry.references)) {
          return okay(ver.id);  // already registered here
        }
        live.push_back(v);
      }
    }
    if (mode != Mode::import_) {
      const Compatibility level = level_locked(subject);
      if (!is_transitive(level) && live.size() > 1) live.erase(live.begin(), live.end() - 1);
      auto reasons = incompatibilities_locked(subject, entry.schema, req, level, live);
      if (!reasons.empty()) {
        std::string msg =
            "Schema being registered is incompatible with an earlier schema for "
            "subject \"" +
            subject + "\", details: [";
        for (size_t i = 0; i < reasons.size(); ++i) msg += (i ? ", " : "") + reasons[i];
        return fail<int32_t>(err(409, 409, msg + "]"));
      }
    }
    entry.id = 0;
    for (const auto& [id, e] : by_id_) {
      if (e.type == entry.type && e.schema == entry.schema &&
          same_refs(e.references, entry.references)) {
        entry.id = id;
      }
    }
    if (req.id) {
      if (entry.id != 0 && entry.id != *req.id) {
        return fail<int32_t>(
            err(422, 42205, "this schema is registered with id " + std::to_string(entry.id)));
      }
      if (entry.id == 0 && by_id_.count(*req.id)) {
        return fail<int32_t>(
            err(422, 42205, "id " + std::to_string(*req.id) + " is taken by another schema"));
      }
      entry.id = *req.id;
    }
    if (entry.id == 0) entry.id = max_id_ + 1;
    sv = SubjectVersion{subject, req.version.value_or(max_version + 1), entry.id, false};
  }
  auto w = write_locked({{schema_key(subject, sv.version), schema_value(sv, entry)}});
  if (!w.ok()) return fail<int32_t>(w.error);
  return okay(entry.id);
}

Answer<std::vector<int32_t>> SchemaRegistry::delete_subject(const std::string& subject,
                                                            bool permanent) {
  std::lock_guard wl(write_mu_);
  if (auto e = refresh_locked()) return fail<std::vector<int32_t>>(*e);
  std::vector<group::JournalRecord> records;
  std::vector<int32_t> deleted;
  {
    std::shared_lock lk(mu_);
    if (mode_locked(subject) == Mode::readonly) {
      return fail<std::vector<int32_t>>(read_only(subject));
    }
    auto s = subjects_.find(subject);
    if (s == subjects_.end() || s->second.versions.empty()) {
      return fail<std::vector<int32_t>>(subject_not_found(subject));
    }
    bool any_live = false;
    for (const auto& [v, ver] : s->second.versions) any_live |= !ver.deleted;
    if (!permanent && !any_live) {
      return fail<std::vector<int32_t>>(err(
          404, 40404,
          "Subject '" + subject + "' was soft deleted. Set permanent=true to delete permanently"));
    }
    if (permanent && any_live) {
      return fail<std::vector<int32_t>>(
          err(404, 40405,
              "Subject '" + subject + "' was not deleted first before being permanently deleted"));
    }
    for (const auto& [v, ver] : s->second.versions) {
      if (auto ids = referencing_ids_locked(subject, v); !ids.empty()) {
        return fail<std::vector<int32_t>>(referenced(subject, v, ids));
      }
    }
    for (const auto& [v, ver] : s->second.versions) {
      deleted.push_back(v);
      if (permanent) {
        records.push_back({schema_key(subject, v), std::nullopt});
      } else {
        SubjectVersion soft = ver;
        soft.deleted = true;
        records.push_back({schema_key(subject, v), schema_value(soft, by_id_.at(ver.id))});
      }
    }
  }
  auto w = write_locked(std::move(records));
  if (!w.ok()) return fail<std::vector<int32_t>>(w.error);
  return okay(std::move(deleted));
}

Answer<int32_t> SchemaRegistry::delete_version(const std::string& subject,
                                               const std::string& version, bool permanent) {
  std::lock_guard wl(write_mu_);
  if (auto e = refresh_locked()) return fail<int32_t>(*e);
  group::JournalRecord record;
  int32_t v = 0;
  {
    std::shared_lock lk(mu_);
    if (mode_locked(subject) == Mode::readonly) return fail<int32_t>(read_only(subject));
    RegistryError e;
    // A numbered version is found soft-deleted too (to answer 40406); "latest" is the newest
    // live one, or the newest of all for a permanent delete.
    const bool numbered = version != "latest" && version != "-1";
    const SubjectVersion* sv = find_version_locked(subject, version, permanent || numbered, e);
    if (!sv) return fail<int32_t>(e);
    v = sv->version;
    if (!permanent && sv->deleted) {
      return fail<int32_t>(err(404, 40406,
                               "Subject '" + subject + "' Version " + std::to_string(v) +
                                   " was soft deleted. Set permanent=true to delete permanently"));
    }
    if (permanent && !sv->deleted) {
      return fail<int32_t>(err(404, 40407,
                               "Subject '" + subject + "' Version " + std::to_string(v) +
                                   " was not deleted first before being permanently deleted"));
    }
    if (auto ids = referencing_ids_locked(subject, v); !ids.empty()) {
      return fail<int32_t>(referenced(subject, v, ids));
    }
    if (permanent) {
      record = {schema_key(subject, v), std::nullopt};
    } else {
      SubjectVersion soft = *sv;
      soft.deleted = true;
      record = {schema_key(subject, v), schema_value(soft, by_id_.at(sv->id))};
    }
  }
  auto w = write_locked({std::move(record)});
  if (!w.ok()) return fail<int32_t>(w.error);
  return okay(v);
}

Answer<Compatibility> SchemaRegistry::set_compatibility(const std::optional<std::string>& subject,
                                                        const std::string& level) {
  auto c = parse_compatibility(level);
  if (!c) {
    return fail<Compatibility>(err(422, 42203, "Invalid compatibility level: " + level));
  }
  std::lock_guard wl(write_mu_);
  if (auto e = refresh_locked()) return fail<Compatibility>(*e);
  nlohmann::json v = {{"compatibilityLevel", compatibility_name(*c)}};
  auto w = write_locked({{config_key(subject, "CONFIG"), v.dump()}});
  if (!w.ok()) return fail<Compatibility>(w.error);
  return okay(*c);
}

Answer<Compatibility> SchemaRegistry::delete_compatibility(
    const std::optional<std::string>& subject) {
  std::lock_guard wl(write_mu_);
  if (auto e = refresh_locked()) return fail<Compatibility>(*e);
  Compatibility had;
  {
    std::shared_lock lk(mu_);
    if (!subject) {
      had = global_level_;
    } else {
      auto s = subjects_.find(*subject);
      if (s == subjects_.end()) return fail<Compatibility>(subject_not_found(*subject));
      had = level_locked(*subject);
    }
  }
  std::vector<group::JournalRecord> records;
  if (subject) {
    records.push_back({config_key(subject, "CONFIG"), std::nullopt});
  } else {  // the global level goes back to the default
    nlohmann::json v = {{"compatibilityLevel", "BACKWARD"}};
    records.push_back({config_key(subject, "CONFIG"), v.dump()});
  }
  auto w = write_locked(std::move(records));
  if (!w.ok()) return fail<Compatibility>(w.error);
  return okay(had);
}

Answer<Mode> SchemaRegistry::set_mode(const std::optional<std::string>& subject,
                                      const std::string& mode) {
  auto m = parse_mode(mode);
  if (!m) return fail<Mode>(err(422, 42204, "Invalid mode: " + mode));
  std::lock_guard wl(write_mu_);
  if (auto e = refresh_locked()) return fail<Mode>(*e);
  nlohmann::json v = {{"mode", mode_name(*m)}};
  auto w = write_locked({{config_key(subject, "MODE"), v.dump()}});
  if (!w.ok()) return fail<Mode>(w.error);
  return okay(*m);
}

}  // namespace strata::broker::schema
