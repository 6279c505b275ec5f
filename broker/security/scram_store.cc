// ScramStore (see scram_store.h): the in-memory copy, the file backend of a single node and the
// etcd backend of a cluster.
#include "broker/security/scram_store.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>

#include "broker/cluster/coordination.h"
#include "broker/cluster/prefix_follower.h"
#include "protocol/base/base64.h"
#include "protocol/base/percent_escape.h"
#include "storage/file_util.h"

namespace strata::broker::security {

namespace {

constexpr std::string_view kFileName = "scram-credentials";
constexpr auto kWatchWait = std::chrono::seconds(5);  // for this broker's copy to see a write

// A user name in a file line or a key segment: only these bytes as they are, every other (tab,
// newline, '/', '%', space, non-ASCII...) percent-escaped.
bool plain_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == '@';
}

std::string escape(std::string_view user) { return percent_escape(user, plain_byte); }

std::optional<ScramMechanism> mechanism_of(std::string_view name) {
  return protocol::sasl::scram_mechanism(name);
}

// Applies one change to a map.
// An etcd failure, as the admin APIs word it (REQUEST_TIMED_OUT: retry).
Status unavailable(const Status& st) {
  return Status(Errc::unavailable, "etcd: " + st.to_string());
}

void apply_change(ScramCredentials& all, const ScramChange& c) {
  if (c.credential) {
    all[c.user][c.mechanism] = *c.credential;
    return;
  }
  auto it = all.find(c.user);
  if (it == all.end()) return;
  it->second.erase(c.mechanism);
  if (it->second.empty()) all.erase(it);
}

}  // namespace

std::string format_scram_credential(const ScramCredential& c) {
  return "salt=" + base64_encode(c.salt) + ",stored_key=" + base64_encode(c.stored_key) +
         ",server_key=" + base64_encode(c.server_key) +
         ",iterations=" + std::to_string(c.iterations);
}

Result<ScramCredential> parse_scram_credential(std::string_view text) {
  ScramCredential c;
  bool salt = false, stored = false, server = false, iterations = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = text.substr(pos, comma - pos);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Status(Errc::invalid_argument, "malformed credential");
    std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "iterations") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), c.iterations);
      if (ec != std::errc() || p != value.data() + value.size()) {
        return Status(Errc::invalid_argument, "malformed credential iterations");
      }
      iterations = true;
    } else {
      auto bytes = base64_decode(value);
      if (!bytes.ok())
        return Status(Errc::invalid_argument, "malformed credential " + std::string(key));
      if (key == "salt") {
        c.salt = std::move(*bytes);
        salt = true;
      } else if (key == "stored_key") {
        c.stored_key = std::move(*bytes);
        stored = true;
      } else if (key == "server_key") {
        c.server_key = std::move(*bytes);
        server = true;
      }  // other keys: ignored, as Kafka's parser does
    }
    pos = comma + 1;
  }
  if (!salt || !stored || !server || !iterations) {
    return Status(Errc::invalid_argument,
                  "credential lacks salt, stored_key, server_key or iterations");
  }
  return c;
}

// ---------------------------------------------------------------- backends

class ScramStore::Backend {
 public:
  virtual ~Backend() = default;
  // Everything stored now (a cluster backend also starts keeping the store's copy in step).
  virtual Result<ScramCredentials> load() = 0;
  // True when the store applies its own writes to its copy; false when the backend keeps the
  // copy in step itself (a cluster's watch, before write() returns).
  virtual bool applies_locally() const = 0;
  // Makes `changes` durable; `next` is the whole set after them.
  virtual Status write(const std::vector<ScramChange>& changes, const ScramCredentials& next) = 0;
  // The change only if no credential of (user, mechanism) exists; true = written.
  virtual Result<bool> write_if_absent(const ScramChange& change, const ScramCredentials& next,
                                       bool present_here) = 0;
  virtual void stop() {}
};

class ScramStore::FileBackend : public Backend {
 public:
  FileBackend(storage::Env* env, std::string path) : env_(env), path_(std::move(path)) {}

  Result<ScramCredentials> load() override {
    ScramCredentials all;
    auto lines = storage::read_line_file(env_, path_);
    if (!lines.ok()) return lines.status();
    for (const auto& line : *lines) {
      const size_t t1 = line.find('\t');
      const size_t t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
      std::optional<std::string> user;
      std::optional<ScramMechanism> m;
      Result<ScramCredential> cred = Status(Errc::invalid_argument, "no credential");
      if (t2 != std::string::npos) {
        user = percent_unescape(std::string_view(line).substr(0, t1));
        m = mechanism_of(std::string_view(line).substr(t1 + 1, t2 - t1 - 1));
        cred = parse_scram_credential(std::string_view(line).substr(t2 + 1));
      }
      if (!user || user->empty() || !m || !cred.ok()) {
        return Status(Errc::corruption, path_ + ": malformed line");  // never print secrets
      }
      all[*user][*m] = std::move(*cred);
    }
    return all;
  }

  bool applies_locally() const override { return true; }
  Status write(const std::vector<ScramChange>&, const ScramCredentials& next) override {
    return persist(next);
  }

  Result<bool> write_if_absent(const ScramChange&, const ScramCredentials& next,
                               bool present_here) override {
    if (present_here) return false;
    STRATA_RETURN_IF_ERROR(persist(next));
    return true;
  }

 private:
  Status persist(const ScramCredentials& all) const {
    std::string text =
        "# SCRAM credentials (AlterUserScramCredentials): user, mechanism, credential\n";
    for (const auto& [user, by_mech] : all) {
      for (const auto& [m, c] : by_mech) {
        text += escape(user);
        text += '\t';
        text += protocol::sasl::scram_mechanism_name(m);
        text += '\t';
        text += format_scram_credential(c);
        text += '\n';
      }
    }
    return storage::write_file_atomically(env_, path_, text);
  }

  storage::Env* env_;
  const std::string path_;
};

class ScramStore::EtcdBackend : public Backend {
 public:
  EtcdBackend(ScramStore& store, cluster::Coordination& co, const std::string& prefix)
      : store_(store),
        co_(co),
        dir_(prefix + "/scram/"),
        follower_(co, dir_, handlers(), "SCRAM credentials") {}
  ~EtcdBackend() override { stop(); }

  std::string key(const std::string& user, ScramMechanism m) const {
    return dir_ + protocol::sasl::scram_mechanism_name(m) + "/" + escape(user);
  }

  // Fills the store's copy and starts following; the copy is what the follower's reset wrote.
  Result<ScramCredentials> load() override {
    STRATA_RETURN_IF_ERROR(follower_.start());
    return store_.all();
  }

  bool applies_locally() const override { return false; }
  Status write(const std::vector<ScramChange>& changes, const ScramCredentials&) override {
    std::vector<cluster::TxnOp> ops;
    for (const auto& c : changes) {
      ops.push_back(c.credential ? cluster::TxnOp::put(key(c.user, c.mechanism),
                                                       format_scram_credential(*c.credential))
                                 : cluster::TxnOp::del(key(c.user, c.mechanism)));
    }
    auto r = co_.txn({}, ops, {});
    if (!r.ok()) return unavailable(r.status());
    wait_for(r->revision);
    return Status::Ok();
  }

  Result<bool> write_if_absent(const ScramChange& c, const ScramCredentials&, bool) override {
    const std::string k = key(c.user, c.mechanism);
    auto r = co_.txn({cluster::Compare::absent(k)},
                     {cluster::TxnOp::put(k, format_scram_credential(*c.credential))}, {});
    if (!r.ok()) return unavailable(r.status());
    if (r->succeeded) wait_for(r->revision);
    return r->succeeded;
  }

  void stop() override { follower_.stop(); }

 private:
  cluster::PrefixFollower::Handlers handlers() {
    cluster::PrefixFollower::Handlers h;
    h.reset = [this](const cluster::RangeResult& all) {
      ScramCredentials creds;
      for (const auto& kv : all.kvs) {
        if (auto parsed = decode(kv)) apply_change(creds, *parsed);
      }
      store_.replace_all(std::move(creds));
    };
    h.apply = [this](const std::vector<cluster::WatchEvent>& events) {
      for (const auto& e : events) {
        if (auto c = decode(e.kv, e.type == cluster::WatchEvent::Type::del)) {
          store_.set(c->user, c->mechanism, c->credential);
        }
      }
    };
    return h;
  }

  // A key and value under dir_ as a change (a deletion when `deleted`); nullopt and a log line
  // for a key or value that does not decode (never applied).
  std::optional<ScramChange> decode(const cluster::KeyValue& kv, bool deleted = false) const {
    std::string_view rest = follower_.relative(kv.key);
    const size_t slash = rest.find('/');
    std::optional<ScramMechanism> m;
    std::optional<std::string> user;
    if (slash != std::string_view::npos) {
      m = mechanism_of(rest.substr(0, slash));
      user = percent_unescape(rest.substr(slash + 1));
    }
    if (!m || !user || user->empty()) {
      spdlog::error("SCRAM credentials: ignoring key {}", kv.key);
      return std::nullopt;
    }
    ScramChange c{*user, *m, std::nullopt};
    if (deleted) return c;
    auto cred = parse_scram_credential(kv.value);
    if (!cred.ok()) {
      spdlog::error("SCRAM credentials: ignoring {}: {}", kv.key, cred.status().to_string());
      return std::nullopt;
    }
    c.credential = std::move(*cred);
    return c;
  }

  void wait_for(int64_t revision) {
    if (!follower_.wait_for(revision, kWatchWait)) {
      spdlog::warn("SCRAM credentials: this broker's copy has not seen revision {} yet", revision);
    }
  }

  ScramStore& store_;
  cluster::Coordination& co_;
  const std::string dir_;
  cluster::PrefixFollower follower_;  // last: stopped before the rest goes
};

// ---------------------------------------------------------------- the store

ScramStore::ScramStore(std::unique_ptr<Backend> backend) : backend_(std::move(backend)) {}

ScramStore::~ScramStore() { stop(); }

Result<std::unique_ptr<ScramStore>> ScramStore::open_file(storage::Env* env,
                                                          const std::string& dir) {
  std::unique_ptr<ScramStore> store(
      new ScramStore(std::make_unique<FileBackend>(env, storage::join_path(dir, kFileName))));
  auto all = store->backend_->load();
  if (!all.ok()) return all.status();
  store->replace_all(std::move(*all));
  return store;
}

Result<std::unique_ptr<ScramStore>> ScramStore::open_cluster(cluster::Coordination& coordination,
                                                             const std::string& prefix) {
  std::unique_ptr<ScramStore> store(new ScramStore(nullptr));
  store->backend_ = std::make_unique<EtcdBackend>(*store, coordination, prefix);
  auto all = store->backend_->load();  // fills the copy and starts the watch
  if (!all.ok()) return all.status();
  return store;
}

void ScramStore::stop() {
  if (backend_) backend_->stop();
}

std::optional<ScramCredential> ScramStore::scram(ScramMechanism mechanism,
                                                 const std::string& user) const {
  std::shared_lock lk(mu_);
  auto u = creds_.find(user);
  if (u == creds_.end()) return std::nullopt;
  auto c = u->second.find(mechanism);
  if (c == u->second.end()) return std::nullopt;
  return c->second;
}

ScramCredentials ScramStore::all() const {
  std::shared_lock lk(mu_);
  return creds_;
}

bool ScramStore::has(const std::string& user, ScramMechanism mechanism) const {
  return scram(mechanism, user).has_value();
}

void ScramStore::replace_all(ScramCredentials all) {
  std::unique_lock lk(mu_);
  creds_ = std::move(all);
}

void ScramStore::set(const std::string& user, ScramMechanism m, std::optional<ScramCredential> c) {
  std::unique_lock lk(mu_);
  apply_change(creds_, ScramChange{user, m, std::move(c)});
}

Status ScramStore::alter(const std::vector<ScramChange>& changes) {
  if (changes.empty()) return Status::Ok();
  std::lock_guard wl(write_mu_);
  ScramCredentials next = all();
  for (const auto& c : changes) apply_change(next, c);
  STRATA_RETURN_IF_ERROR(backend_->write(changes, next));
  if (backend_->applies_locally()) replace_all(std::move(next));
  return Status::Ok();
}

Result<bool> ScramStore::put_if_absent(const std::string& user, ScramMechanism mechanism,
                                       const ScramCredential& credential) {
  std::lock_guard wl(write_mu_);
  ScramChange change{user, mechanism, credential};
  ScramCredentials next = all();
  const bool present = next.count(user) && next[user].count(mechanism);
  apply_change(next, change);
  auto written = backend_->write_if_absent(change, next, present);
  if (!written.ok()) return written.status();
  if (*written && backend_->applies_locally()) replace_all(std::move(next));
  return *written;
}

}  // namespace strata::broker::security
