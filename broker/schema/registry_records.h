// The embedded Schema Registry's internals shared by its two sources: answers (Confluent's error
// bodies) and `_schemas` records in Confluent's key/value JSON, so the topic is portable.
#pragma once

#include <charconv>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "broker/schema/schema_registry.h"

namespace strata::broker::schema::detail {

inline RegistryError err(int http, int code, std::string message) {
  return RegistryError{http, code, std::move(message)};
}
inline RegistryError subject_not_found(const std::string& subject) {
  return err(404, 40401, "Subject '" + subject + "' not found.");
}
template <typename T>
Answer<T> fail(RegistryError e) {
  Answer<T> a;
  a.error = std::move(e);
  return a;
}
template <typename T>
Answer<T> okay(T v) {
  Answer<T> a;
  a.value = std::move(v);
  return a;
}

inline std::optional<int32_t> parse_int(const std::string& s) {
  int32_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

inline bool same_refs(const std::vector<SchemaReference>& a,
                      const std::vector<SchemaReference>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].subject != b[i].subject || a[i].version != b[i].version) {
      return false;
    }
  }
  return true;
}

// Record keys and values (schema_registry.cc).
std::string schema_key(const std::string& subject, int32_t version);
std::string schema_value(const SubjectVersion& v, const SchemaEntry& e);
// [{"name","subject","version"}...] of a schema's references.
nlohmann::json references_json(const std::vector<SchemaReference>& refs);
// CONFIG or MODE key of a subject (nullopt: the global one).
std::string config_key(const std::optional<std::string>& subject, const char* keytype);

}  // namespace strata::broker::schema::detail
