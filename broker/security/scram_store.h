// ScramStore: the SCRAM credentials behind SaslAuthenticate (security::CredentialStore) and the
// DescribeUserScramCredentials / AlterUserScramCredentials APIs. Kafka's model: per user and
// mechanism a salt, stored key, server key and iteration count — never a password.
//  - Single node (ScramStore::open_file): `<first log dir>/scram-credentials`, rewritten atomically
//    (write, fsync, rename) on every change. One line per credential:
//    `<user, percent-escaped>\t<mechanism>\t<credential>`.
//  - Cluster (ScramStore::open_cluster): one etcd key per credential,
//    `<prefix>/scram/<mechanism>/<user, percent-escaped>`, so every broker sees every change. Each
//    broker holds an in-memory copy of `<prefix>/scram/`, kept in step by a cluster::PrefixFollower
//    (read at start, then a watch, re-read after a compaction); an alteration is one
//    etcd transaction, and returns once this broker's copy has it (read-your-writes on the broker
//    that answered).
// `<credential>` is Kafka's own text form (ScramCredentialUtils):
// `salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>`.
// Lookups read the in-memory copy only (SaslAuthenticate runs on I/O threads); alterations block
// on the file or etcd. Thread-safe.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "broker/security/security_services.h"
#include "protocol/base/result.h"
#include "protocol/sasl/scram.h"

namespace strata::storage {
class Env;
}
namespace strata::broker::cluster {
class Coordination;
}  // namespace strata::broker::cluster

namespace strata::broker::security {

using protocol::sasl::ScramCredential;
using protocol::sasl::ScramMechanism;

// user -> mechanism -> credential.
using ScramCredentials = std::map<std::string, std::map<ScramMechanism, ScramCredential>>;

// One change: a credential to put, or (nullopt) the user's credential of `mechanism` to remove.
struct ScramChange {
  std::string user;
  ScramMechanism mechanism = ScramMechanism::sha256;
  std::optional<ScramCredential> credential;
};

// Kafka's text form of a credential, and back (invalid_argument on anything malformed).
std::string format_scram_credential(const ScramCredential& c);
Result<ScramCredential> parse_scram_credential(std::string_view text);

class ScramStore : public CredentialStore {
 public:
  // Reads `<dir>/scram-credentials` (absent = no credentials).
  static Result<std::unique_ptr<ScramStore>> open_file(storage::Env* env, const std::string& dir);
  // Reads `<prefix>/scram/` and starts watching it. `coordination` outlives the store.
  static Result<std::unique_ptr<ScramStore>> open_cluster(cluster::Coordination& coordination,
                                                          const std::string& prefix);
  ~ScramStore() override;

  std::optional<ScramCredential> scram(ScramMechanism mechanism,
                                       const std::string& user) const override;
  ScramCredentials all() const;
  bool has(const std::string& user, ScramMechanism mechanism) const;

  // Applies every change durably, all or none; then lookups see them.
  Status alter(const std::vector<ScramChange>& changes);
  // Puts `credential` only if the user has no credential of that mechanism yet (a bootstrap
  // user: another broker may have created it first). true = this call created it.
  Result<bool> put_if_absent(const std::string& user, ScramMechanism mechanism,
                             const ScramCredential& credential);
  // Stops the watch (cluster mode); lookups keep answering from the last copy. Idempotent.
  void stop();

 private:
  class Backend;
  class FileBackend;
  class EtcdBackend;
  explicit ScramStore(std::unique_ptr<Backend> backend);
  void replace_all(ScramCredentials all);
  void set(const std::string& user, ScramMechanism m, std::optional<ScramCredential> c);

  std::unique_ptr<Backend> backend_;
  mutable std::shared_mutex mu_;
  ScramCredentials creds_;
  std::mutex write_mu_;  // one alteration at a time on this broker
};

}  // namespace strata::broker::security
