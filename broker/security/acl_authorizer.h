// The durable ACL authorizers behind Services::authorizer (authorizer.class.name set). Both keep
// the bindings in an in-memory AclStore that answers every authorize() without I/O; they differ in
// where a change becomes durable before it applies:
//  - FileAclAuthorizer (a single node): `<first log dir>/acls`, rewritten atomically on every
//    change, one acl_text line per binding; read back at start.
//  - ClusterAclAuthorizer (cluster mode): one etcd key per binding under `{prefix}/acls/` (the
//    key is the binding's acl_text line, the value its JSON), so every broker of the cluster
//    authorizes alike. Each broker follows them with a cluster::PrefixFollower (read at start,
//    then a watch, re-read after a compaction); a change returns once this broker's store has it
//    (read-your-writes for the request that follows).
// Thread-safe: authorize()/acls() share the store's lock; changes are serialised.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "broker/security/acl.h"
#include "broker/security/security_services.h"
#include "protocol/base/result.h"

namespace strata::storage {
class Env;
}
namespace strata::broker::cluster {
class Coordination;
class PrefixFollower;
}  // namespace strata::broker::cluster

namespace strata::broker::security {

class AclAuthorizer : public Authorizer {
 public:
  explicit AclAuthorizer(AuthorizerConfig config) : store_(std::move(config)) {}

  bool authorize(const std::string& principal, const std::string& host, AclOperation op,
                 ResourceType type, const std::string& name) const override {
    return store_.authorize(principal, host, op, type, name);
  }
  bool authorize_any(const std::string& principal, const std::string& host, AclOperation op,
                     ResourceType type) const override {
    return store_.authorize_any(principal, host, op, type);
  }
  std::vector<AclBinding> acls(const AclFilter& filter) const override {
    return store_.list(filter);
  }

 protected:
  AclStore store_;
};

class FileAclAuthorizer : public AclAuthorizer {
 public:
  // Reads `<dir>/acls` (absent = no ACLs); a malformed line fails (corruption).
  static Result<std::unique_ptr<FileAclAuthorizer>> open(storage::Env* env, const std::string& dir,
                                                         AuthorizerConfig config);
  Status create(const std::vector<AclBinding>& bindings) override;
  Result<std::vector<AclBinding>> remove(const AclFilter& filter) override;
  const std::string& path() const { return path_; }

 private:
  FileAclAuthorizer(storage::Env* env, std::string path, AuthorizerConfig config)
      : AclAuthorizer(std::move(config)), env_(env), path_(std::move(path)) {}
  Status persist(const std::vector<AclBinding>& all) const;

  storage::Env* env_;
  const std::string path_;
  std::mutex write_mu_;
};

class ClusterAclAuthorizer : public AclAuthorizer {
 public:
  // `prefix` is the cluster's (coordination.etcd.prefix); `coordination` outlives this. Reads
  // the ACLs and starts watching; fails when etcd cannot be read.
  static Result<std::unique_ptr<ClusterAclAuthorizer>> open(cluster::Coordination& coordination,
                                                            const std::string& prefix,
                                                            AuthorizerConfig config);
  ~ClusterAclAuthorizer() override;
  Status create(const std::vector<AclBinding>& bindings) override;
  Result<std::vector<AclBinding>> remove(const AclFilter& filter) override;
  void stop();

  std::string key_of(const AclBinding& b) const { return dir_ + encode_key(b); }
  static std::string encode_key(const AclBinding& b);

 private:
  ClusterAclAuthorizer(cluster::Coordination& coordination, std::string dir,
                       AuthorizerConfig config);
  // The binding a key under dir_ names; nullopt (logged) when it does not decode.
  std::optional<AclBinding> decode_key(const std::string& key) const;
  // Waits (bounded) until this broker's store reflects etcd revision `revision`.
  Status wait_for(int64_t revision);

  cluster::Coordination& coordination_;
  const std::string dir_;  // "{prefix}/acls/"
  std::mutex write_mu_;
  std::unique_ptr<cluster::PrefixFollower> follower_;  // last: stopped before the rest goes
};

}  // namespace strata::broker::security
