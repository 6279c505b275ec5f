// What request handlers ask of the security layer, as two narrow interfaces so the SASL code, the
// per-API checks and the durable stores behind them can change independently.
//  - Authorizer: Kafka's authorization decision for one request on one resource. Absent
//    (Services::authorizer == nullptr) when `authorizer.class.name` is empty: everything is allowed
//    and the ACL APIs answer SECURITY_DISABLED.
//  - CredentialStore: the SCRAM credentials SaslAuthenticate checks against (salted keys, never a
//    password), durable, shared by every broker of a cluster.
// Both are thread-safe (called from many connection strands at once).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "broker/security/acl.h"
#include "protocol/base/result.h"
#include "protocol/sasl/scram.h"

namespace strata::broker::security {

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  virtual bool authorize(const std::string& principal, const std::string& host, AclOperation op,
                         ResourceType type, const std::string& name) const = 0;
  // Whether `op` is allowed on some resource of `type` (Kafka's authorizeByResourceType, KIP-679:
  // an idempotent InitProducerId with WRITE on any topic).
  virtual bool authorize_any(const std::string& principal, const std::string& host, AclOperation op,
                             ResourceType type) const = 0;

  // ACL administration (DescribeAcls / CreateAcls / DeleteAcls), durable before they return;
  // bindings are valid_binding() ones. create: all or nothing. remove: the bindings it removed.
  virtual std::vector<AclBinding> acls(const AclFilter& filter) const = 0;
  virtual Status create(const std::vector<AclBinding>& bindings) = 0;
  virtual Result<std::vector<AclBinding>> remove(const AclFilter& filter) = 0;
};

class CredentialStore {
 public:
  virtual ~CredentialStore() = default;
  virtual std::optional<protocol::sasl::ScramCredential> scram(
      protocol::sasl::ScramMechanism mechanism, const std::string& user) const = 0;
};

}  // namespace strata::broker::security
