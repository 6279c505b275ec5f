// SchemaRegistry: the embedded Schema Registry's state and operations (Confluent's REST model:
// subjects with numbered versions, schemas with global ids, compatibility levels, modes), durable
// in the compacted internal topic `_schemas` with Confluent's record keys and values, so the data
// is portable (docs/schema-registry.md).
//
// One writer: every write (register, delete, config, mode) takes the write mutex, builds the
// `_schemas` records, appends them through the journal (durable: fsynced on a single node) and
// only then applies them to memory — so an answer never names an id or version that a restart
// could lose, and ids stay unique. Reads are served from memory under a shared lock.
// load() replays `_schemas` at start (before serving): the state is the replay of the topic.
//
// Schema types: AVRO (protocol/schema/avro_schema.h), JSON, i.e. JSON Schema
// (protocol/schema/json_schema.h), and PROTOBUF (protocol/schema/protobuf_schema.h), each parsed
// and checked by its rules; a reference must be of its referrer's type.
// Thread-safe.
#pragma once

#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "broker/group/group_journal.h"
#include "protocol/base/result.h"

namespace strata::broker::schema {

namespace detail {
struct ParsedSchema;  // registry_parse.h
}

inline constexpr const char* kSchemasTopic = "_schemas";

// A failed operation as Confluent answers it: HTTP status and body {"error_code", "message"}.
struct RegistryError {
  int http_status = 500;
  int error_code = 50001;
  std::string message;
};
template <typename T>
struct Answer {
  std::optional<T> value;
  RegistryError error;  // when !value
  bool ok() const { return value.has_value(); }
};

enum class Compatibility {
  none,
  backward,
  backward_transitive,
  forward,
  forward_transitive,
  full,
  full_transitive
};
std::optional<Compatibility> parse_compatibility(const std::string& s);
const char* compatibility_name(Compatibility c);

enum class Mode { readwrite, readonly, import_ };
std::optional<Mode> parse_mode(const std::string& s);
const char* mode_name(Mode m);

struct SchemaReference {
  std::string name;  // the named type (Avro) it provides
  std::string subject;
  int32_t version = 0;
};

// One registered schema (ids are global; one id per distinct type + schema text + references).
struct SchemaEntry {
  int32_t id = 0;
  std::string type = "AVRO";
  std::string schema;  // as registered (normalized)
  std::vector<SchemaReference> references;
};

struct SubjectVersion {
  std::string subject;
  int32_t version = 0;
  int32_t id = 0;
  bool deleted = false;  // soft-deleted
};

struct RegisterRequest {
  std::string schema;
  std::string type = "AVRO";
  std::vector<SchemaReference> references;
  std::optional<int32_t> id;       // IMPORT mode only
  std::optional<int32_t> version;  // IMPORT mode only
};

class SchemaRegistry {
 public:
  // `journal`: partition 0 of `_schemas`; outlives the registry. A write waits for its append,
  // which the journal always answers (fsynced, failed, or its commit timeout) on the broker's
  // main context — up to `write_wait_ms` (then 50002; the next write first waits for that
  // answer, then reads the topic again).
  explicit SchemaRegistry(group::GroupJournal& journal, int64_t write_wait_ms = 15000);

  // Replays `_schemas` into memory (before serving). Unreadable records are skipped and counted.
  Status load();
  size_t skipped_records() const { return skipped_; }
  // Rebuilds memory from `_schemas` — in a cluster, when this broker becomes the registry's
  // writer (its replica holds every committed record; another writer may have added some).
  Status reload();
  // What feeds a rebuild: calls its argument for records of `_schemas` in log order.
  using Replay =
      std::function<Status(const std::function<Status(const group::JournalRecord&)>& apply)>;
  // Replaces memory with what `replay` feeds (in a cluster, a broker that is not the writer keeps
  // a copy of its replica's committed records to serve reads). Readers see the old state or the
  // new one, never a mix. The next write on this registry reads the topic again first.
  Status rebuild(const Replay& replay);

  // --- Writes ---
  // POST /subjects/{s}/versions: the schema's id (an existing version of the subject with the
  // same schema answers its id and adds nothing; the same schema under another subject keeps its
  // id). 409 when incompatible with the subject's level, 42201 invalid schema, 42205 read-only.
  Answer<int32_t> register_schema(const std::string& subject, const RegisterRequest& req);
  // DELETE /subjects/{s}[?permanent=true]: the versions deleted.
  Answer<std::vector<int32_t>> delete_subject(const std::string& subject, bool permanent);
  // DELETE /subjects/{s}/versions/{v|latest}[?permanent=true]: the version deleted.
  Answer<int32_t> delete_version(const std::string& subject, const std::string& version,
                                 bool permanent);
  // PUT /config[/{s}]; DELETE /config/{s} (answers the level it had).
  Answer<Compatibility> set_compatibility(const std::optional<std::string>& subject,
                                          const std::string& level);
  Answer<Compatibility> delete_compatibility(const std::optional<std::string>& subject);
  // PUT /mode[/{s}].
  Answer<Mode> set_mode(const std::optional<std::string>& subject, const std::string& mode);

  // --- Reads ---
  std::vector<std::string> subjects(bool include_deleted) const;
  Answer<std::vector<int32_t>> versions(const std::string& subject, bool include_deleted) const;
  // GET /subjects/{s}/versions/{v|latest|-1}.
  Answer<std::pair<SubjectVersion, SchemaEntry>> version(const std::string& subject,
                                                         const std::string& version,
                                                         bool include_deleted = false) const;
  // POST /subjects/{s}: the version of the subject holding this schema.
  Answer<std::pair<SubjectVersion, SchemaEntry>> lookup(const std::string& subject,
                                                        const RegisterRequest& req,
                                                        bool include_deleted = false) const;
  Answer<SchemaEntry> schema_by_id(int32_t id) const;
  // GET /schemas/ids/{id}/versions.
  Answer<std::vector<SubjectVersion>> versions_of_id(int32_t id, bool deleted = false) const;
  // GET /subjects/{s}/versions/{v|latest}/referencedby: the ids of the live schemas whose
  // references name this version (a deleted one cannot be deleted while any does: 42206).
  Answer<std::vector<int32_t>> referenced_by(const std::string& subject,
                                             const std::string& version) const;
  // GET /config[/{s}]: the subject's own level (40408 when it has none, unless
  // `default_to_global`), or the global one.
  Answer<Compatibility> compatibility(const std::optional<std::string>& subject,
                                      bool default_to_global) const;
  Answer<Mode> mode(const std::optional<std::string>& subject) const;
  // POST /compatibility/subjects/{s}/versions/{v|latest}: reasons it is incompatible (empty:
  // compatible).
  Answer<std::vector<std::string>> check_compatibility(const std::string& subject,
                                                       const std::string& version,
                                                       const RegisterRequest& req) const;
  static std::vector<std::string> types() { return {"JSON", "PROTOBUF", "AVRO"}; }

  // --- Typed tables ---
  // The parsed schema of an id, its references resolved (registry_parse.h), or Errc::not_found
  // / invalid_argument. Cached: an id's schema never changes while the broker runs.
  Result<std::shared_ptr<const detail::ParsedSchema>> parsed_schema(int32_t id) const;

 private:
  struct Subject {
    std::map<int32_t, SubjectVersion> versions;  // by version, soft-deleted ones included
    std::optional<Compatibility> compatibility;
    std::optional<Mode> mode;
  };
  // Applies one `_schemas` record (Confluent's key and value JSON; nullopt value = tombstone).
  // Requires mu_ exclusive. False when the record is not understood.
  bool apply_locked(const group::JournalRecord& r);
  // Requires write_mu_, first in every write: after an append whose outcome is unknown, memory
  // is rebuilt from the topic before anything is computed from it.
  std::optional<RegistryError> refresh_locked();
  // Requires write_mu_: memory = what `replay` feeds, under mu_ exclusive.
  Status replace_locked(const Replay& replay);
  // Appends `records` and applies them once durable. Requires write_mu_.
  Answer<bool> write_locked(std::vector<group::JournalRecord> records);
  // The schema checked and normalized (its references resolved); 42201 when invalid.
  // The ids of live schema versions referencing `subject` version `version` (a reference to -1
  // counts for the subject's newest version), sorted.
  std::vector<int32_t> referencing_ids_locked(const std::string& subject, int32_t version) const;
  // The schema a reference names (version -1: the subject's latest); null when there is none.
  const SchemaEntry* find_reference_locked(const SchemaReference& ref) const;
  Answer<std::string> validate_locked(const RegisterRequest& req) const;
  // Reasons `schema` cannot be registered after the subject's live versions under `level`.
  std::vector<std::string> incompatibilities_locked(const std::string& subject,
                                                    const std::string& schema,
                                                    const RegisterRequest& req, Compatibility level,
                                                    const std::vector<int32_t>& against) const;
  Compatibility level_locked(const std::string& subject) const;
  Mode mode_locked(const std::string& subject) const;
  const SubjectVersion* find_version_locked(const std::string& subject, const std::string& v,
                                            bool include_deleted, RegistryError& err) const;

  group::GroupJournal& journal_;
  int64_t write_wait_ms_;
  bool stale_ = false;  // an append's outcome is unknown (guarded by write_mu_)
  std::future<protocol::ErrorCode> unanswered_;  // that append's answer (guarded by write_mu_)
  std::mutex write_mu_;                          // one writer at a time (ids, versions)
  mutable std::shared_mutex mu_;
  std::map<std::string, Subject> subjects_;
  std::map<int32_t, SchemaEntry> by_id_;
  Compatibility global_level_ = Compatibility::backward;
  Mode global_mode_ = Mode::readwrite;
  int32_t max_id_ = 0;
  size_t skipped_ = 0;
  mutable std::mutex parsed_mu_;  // the cache below; taken after mu_, never before
  mutable std::map<int32_t, std::shared_ptr<const detail::ParsedSchema>> parsed_;
};

}  // namespace strata::broker::schema
