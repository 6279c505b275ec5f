// Text forms of ACL bindings: Kafka's enum names (TOPIC, PREFIXED, READ, ALLOW — what kafka-acls
// prints and audit lines show) and one binding as one line, the unit both durable stores keep:
//   <resource type>\t<pattern>\t<name>\t<principal>\t<host>\t<operation>\t<permission>
// with name, principal and host percent-escaped (control bytes, space, '%', '/', non-ASCII), so a
// line is also a flat etcd key. Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "broker/security/acl.h"

namespace strata::broker::security {

const char* name_of(ResourceType t);
const char* name_of(PatternType p);
const char* name_of(AclOperation o);
const char* name_of(AclPermission p);

// Case-insensitive, '-' and '_' alike ("transactional-id", "TRANSACTIONAL_ID").
std::optional<ResourceType> parse_resource_type(std::string_view s);
std::optional<PatternType> parse_pattern_type(std::string_view s);
std::optional<AclOperation> parse_operation(std::string_view s);
std::optional<AclPermission> parse_permission(std::string_view s);

std::string encode_line(const AclBinding& b);
// nullopt for anything encode_line could not have written or an invalid binding.
std::optional<AclBinding> decode_line(std::string_view line);

// "User:alice from * ALLOW READ on TOPIC LITERAL orders" (logs, errors).
std::string describe(const AclBinding& b);

}  // namespace strata::broker::security
