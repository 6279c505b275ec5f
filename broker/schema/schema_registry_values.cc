// SchemaRegistry's parsed schemas by id, for typed tables' values; see schema_registry.h.
#include <string>

#include "broker/schema/registry_parse.h"
#include "broker/schema/schema_registry.h"

namespace strata::broker::schema {

Result<std::shared_ptr<const detail::ParsedSchema>> SchemaRegistry::parsed_schema(
    int32_t id) const {
  {
    std::lock_guard lk(parsed_mu_);
    if (auto it = parsed_.find(id); it != parsed_.end()) return it->second;
  }
  std::shared_lock lk(mu_);
  auto e = by_id_.find(id);
  if (e == by_id_.end()) {
    return Status(Errc::not_found, "schema id " + std::to_string(id) + " is not registered");
  }
  const std::function<const SchemaEntry*(const SchemaReference&)> find =
      [this](const SchemaReference& ref) { return find_reference_locked(ref); };
  auto parsed =
      detail::SchemaParser{find}.parse(e->second.type, e->second.schema, e->second.references, 0);
  if (!parsed.ok()) {
    return Status(Errc::invalid_argument,
                  "schema id " + std::to_string(id) + ": " + parsed.status().message());
  }
  auto shared = std::make_shared<const detail::ParsedSchema>(std::move(*parsed));
  std::lock_guard clk(parsed_mu_);
  return parsed_.emplace(id, std::move(shared)).first->second;
}

}  // namespace strata::broker::schema
