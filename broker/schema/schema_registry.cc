// SchemaRegistry: state, `_schemas` records and operations; see schema_registry.h.
#include "broker/schema/schema_registry.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <future>
#include <nlohmann/json.hpp>

#include "broker/schema/registry_records.h"

namespace strata::broker::schema {

using nlohmann::json;

using namespace detail;

std::string detail::schema_key(const std::string& subject, int32_t version) {
  // Confluent's field order (readers parse JSON, but the bytes then match its own records).
  json k = {{"keytype", "SCHEMA"}, {"subject", subject}, {"version", version}, {"magic", 1}};
  return k.dump();
}

std::string detail::config_key(const std::optional<std::string>& subject, const char* keytype) {
  json k = {
      {"keytype", keytype}, {"subject", subject ? json(*subject) : json(nullptr)}, {"magic", 0}};
  return k.dump();
}

std::string detail::schema_value(const SubjectVersion& v, const SchemaEntry& e) {
  json j = {{"subject", v.subject},
            {"version", v.version},
            {"id", v.id},
            {"schema", e.schema},
            {"deleted", v.deleted}};
  if (e.type != "AVRO") j["schemaType"] = e.type;
  if (!e.references.empty()) j["references"] = references_json(e.references);
  return j.dump();
}

json detail::references_json(const std::vector<SchemaReference>& refs) {
  json a = json::array();
  for (const auto& r : refs) {
    a.push_back({{"name", r.name}, {"subject", r.subject}, {"version", r.version}});
  }
  return a;
}

namespace {

// One table per enum: both directions read it.
constexpr std::pair<const char*, Compatibility> kLevels[] = {
    {"NONE", Compatibility::none},
    {"BACKWARD", Compatibility::backward},
    {"BACKWARD_TRANSITIVE", Compatibility::backward_transitive},
    {"FORWARD", Compatibility::forward},
    {"FORWARD_TRANSITIVE", Compatibility::forward_transitive},
    {"FULL", Compatibility::full},
    {"FULL_TRANSITIVE", Compatibility::full_transitive}};
constexpr std::pair<const char*, Mode> kModes[] = {
    {"READWRITE", Mode::readwrite}, {"READONLY", Mode::readonly}, {"IMPORT", Mode::import_}};

template <typename E, size_t N>
std::optional<E> by_name(const std::pair<const char*, E> (&table)[N], const std::string& s) {
  for (const auto& [n, e] : table) {
    if (s == n) return e;
  }
  return std::nullopt;
}
template <typename E, size_t N>
const char* name_of(const std::pair<const char*, E> (&table)[N], E e) {
  for (const auto& [n, v] : table) {
    if (v == e) return n;
  }
  return table[0].first;
}

}  // namespace

std::optional<Compatibility> parse_compatibility(const std::string& s) {
  return by_name(kLevels, s);
}
const char* compatibility_name(Compatibility c) { return name_of(kLevels, c); }
std::optional<Mode> parse_mode(const std::string& s) { return by_name(kModes, s); }
const char* mode_name(Mode m) { return name_of(kModes, m); }

SchemaRegistry::SchemaRegistry(group::GroupJournal& journal, int64_t write_wait_ms)
    : journal_(journal), write_wait_ms_(write_wait_ms) {}

Status SchemaRegistry::load() {
  std::unique_lock lk(mu_);
  return journal_.replay(0, [&](const group::JournalRecord& r) {
    if (!apply_locked(r)) ++skipped_;
    return Status::Ok();
  });
}

Status SchemaRegistry::reload() {
  std::lock_guard w(write_mu_);
  stale_ = true;
  if (auto e = refresh_locked()) return Status(Errc::io_error, e->message);
  return Status::Ok();
}

bool SchemaRegistry::apply_locked(const group::JournalRecord& r) {
  json k = json::parse(r.key, nullptr, /*allow_exceptions=*/false);
  if (!k.is_object() || !k.contains("keytype") || !k["keytype"].is_string()) return false;
  const std::string type = k["keytype"];
  std::optional<std::string> subject;
  if (k.contains("subject") && k["subject"].is_string()) subject = k["subject"].get<std::string>();
  json v;
  if (r.value) {
    v = json::parse(*r.value, nullptr, false);
    if (!v.is_object()) return false;
  }
  if (type == "NOOP") return true;
  if (type == "SCHEMA") {
    if (!subject || !k.contains("version") || !k["version"].is_number_integer()) return false;
    const int32_t version = k["version"];
    Subject& s = subjects_[*subject];
    if (!r.value) {  // a permanent delete
      auto it = s.versions.find(version);
      if (it == s.versions.end()) return true;
      const int32_t id = it->second.id;
      s.versions.erase(it);
      bool used = false;
      for (const auto& [name, sub] : subjects_) {
        for (const auto& [n, sv] : sub.versions) used |= sv.id == id;
      }
      if (!used) by_id_.erase(id);
      return true;
    }
    if (!v.contains("id") || !v["id"].is_number_integer() || !v.contains("schema") ||
        !v["schema"].is_string()) {
      return false;
    }
    SchemaEntry e;
    e.id = v["id"];
    e.schema = v["schema"];
    if (v.contains("schemaType") && v["schemaType"].is_string()) e.type = v["schemaType"];
    if (v.contains("references") && v["references"].is_array()) {
      for (const auto& ref : v["references"]) {
        if (!ref.is_object() || !ref.contains("name") || !ref.contains("subject") ||
            !ref.contains("version")) {
          return false;
        }
        e.references.push_back({ref["name"].get<std::string>(), ref["subject"].get<std::string>(),
                                ref["version"].get<int32_t>()});
      }
    }
    SubjectVersion sv{
        *subject, version, e.id,
        v.contains("deleted") && v["deleted"].is_boolean() && v["deleted"].get<bool>()};
    s.versions[version] = sv;
    max_id_ = std::max(max_id_, e.id);
    by_id_[e.id] = std::move(e);
    return true;
  }
  if (type == "CONFIG" || type == "MODE") {
    const bool config = type == "CONFIG";
    if (!r.value) {
      if (subject) {
        auto it = subjects_.find(*subject);
        if (it != subjects_.end()) {
          if (config) {
            it->second.compatibility.reset();
          } else {
            it->second.mode.reset();
          }
        }
      }
      return true;
    }
    const char* field = config ? "compatibilityLevel" : "mode";
    if (!v.contains(field) || !v[field].is_string()) return false;
    const std::string value = v[field];
    if (config) {
      auto c = parse_compatibility(value);
      if (!c) return false;
      if (subject) {
        subjects_[*subject].compatibility = *c;
      } else {
        global_level_ = *c;
      }
    } else {
      auto m = parse_mode(value);
      if (!m) return false;
      if (subject) {
        subjects_[*subject].mode = *m;
      } else {
        global_mode_ = *m;
      }
    }
    return true;
  }
  if (type == "DELETE_SUBJECT" || type == "CLEAR_SUBJECT") {
    // Confluent's own soft (DELETE_SUBJECT) and permanent (CLEAR_SUBJECT) deletes up to a version;
    // Strata writes per-version SCHEMA records instead, but reads both.
    if (!subject || !v.contains("version") || !v["version"].is_number_integer()) return false;
    const int32_t upto = v["version"];
    auto it = subjects_.find(*subject);
    if (it == subjects_.end()) return true;
    for (auto vit = it->second.versions.begin(); vit != it->second.versions.end();) {
      if (vit->first <= upto) {
        if (type == "DELETE_SUBJECT") {
          vit->second.deleted = true;
        } else if (vit->second.deleted) {
          vit = it->second.versions.erase(vit);
          continue;
        }
      }
      ++vit;
    }
    return true;
  }
  return false;
}

std::optional<RegistryError> SchemaRegistry::refresh_locked() {
  if (!stale_) return std::nullopt;
  // An earlier append's outcome is unknown: the topic is the truth — once that append is no
  // longer queued or being written (read before, it could take the id a later write takes).
  if (unanswered_.valid()) {
    if (unanswered_.wait_for(std::chrono::milliseconds(write_wait_ms_)) !=
        std::future_status::ready) {
      return err(500, 50002, "Operation timed out writing to the schemas topic");
    }
    unanswered_ = {};
  }
  Status st = replace_locked([this](const auto& apply) { return journal_.replay(0, apply); });
  if (!st.ok()) return err(500, 50001, "Error while reading the schemas topic: " + st.message());
  stale_ = false;
  return std::nullopt;
}

Status SchemaRegistry::rebuild(const Replay& replay) {
  std::lock_guard w(write_mu_);
  Status st = replace_locked(replay);
  stale_ = true;  // a copy: a write here (this broker made the writer) reads the topic first
  return st;
}

Status SchemaRegistry::replace_locked(const Replay& replay) {
  std::unique_lock lk(mu_);
  subjects_.clear();
  by_id_.clear();
  global_level_ = Compatibility::backward;
  global_mode_ = Mode::readwrite;
  max_id_ = 0;
  return replay([&](const group::JournalRecord& r) {
    apply_locked(r);
    return Status::Ok();
  });
}

Answer<bool> SchemaRegistry::write_locked(std::vector<group::JournalRecord> records) {
  auto done = std::make_shared<std::promise<protocol::ErrorCode>>();
  auto result = done->get_future();
  journal_.append(0, records, [done](protocol::ErrorCode e, int64_t) { done->set_value(e); });
  // Memory changes only once the records are durable, so an id is never handed out twice; an
  // unknown outcome (the wait's bound passed) makes the next write read the topic again first.
  if (result.wait_for(std::chrono::milliseconds(write_wait_ms_)) != std::future_status::ready) {
    stale_ = true;
    unanswered_ = std::move(result);
    return fail<bool>(err(500, 50002, "Operation timed out writing to the schemas topic"));
  }
  const protocol::ErrorCode e = result.get();
  if (e != protocol::ErrorCode::none) {
    // In a cluster a write refused after its append (its commit timeout, a lost leadership) may
    // still become committed: the next write reads the topic first.
    stale_ = true;
    return fail<bool>(
        err(500, 50001,
            "Error while writing to the schemas topic: " + std::string(protocol::error_name(e))));
  }
  std::unique_lock lk(mu_);
  for (const auto& r : records) apply_locked(r);
  return okay(true);
}

Compatibility SchemaRegistry::level_locked(const std::string& subject) const {
  auto it = subjects_.find(subject);
  if (it != subjects_.end() && it->second.compatibility) return *it->second.compatibility;
  return global_level_;
}

Mode SchemaRegistry::mode_locked(const std::string& subject) const {
  auto it = subjects_.find(subject);
  if (it != subjects_.end() && it->second.mode) return *it->second.mode;
  return global_mode_;
}

}  // namespace strata::broker::schema
