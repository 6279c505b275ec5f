// ScramStore (see scram_store.h): the in-memory copy, the file backend of a single node and the
// etcd backend of a cluster.
#include "broker/security/scram_store.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <sstream>
#include <thread>

#include "broker/cluster/coordination.h"
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
    auto text = storage::read_file_to_string(env_, path_);
    if (!text.ok()) {
      if (text.status().code() == Errc::not_found) return all;
      return text.status();
    }
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.empty() || line[0] == '#') continue;
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
      : store_(store), co_(co), dir_(prefix + "/scram/") {}
  ~EtcdBackend() override { stop(); }

  std::string key(const std::string& user, ScramMechanism m) const {
    return dir_ + protocol::sasl::scram_mechanism_name(m) + "/" + escape(user);
  }

  Result<ScramCredentials> load() override {
    std::lock_guard lk(watch_mu_);
    return load_and_watch();
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

  void stop() override {
    std::unique_ptr<cluster::Watch> w;
    {
      std::lock_guard lk(watch_mu_);
      stopped_ = true;
      w = std::move(watch_);
    }
    if (w) w->cancel();
    std::lock_guard guard(rewatch_mu_);
    if (rewatch_.joinable()) rewatch_.join();
  }

 private:
  // With watch_mu_ held.
  Result<ScramCredentials> load_and_watch() {
    auto all = co_.range(dir_, cluster::prefix_end(dir_));
    if (!all.ok()) return all.status();
    ScramCredentials creds;
    for (const auto& kv : all->kvs) {
      if (auto parsed = decode(kv)) apply_change(creds, *parsed);
    }
    store_.replace_all(creds);
    advance(all->revision);
    auto w = co_.watch(dir_, cluster::prefix_end(dir_), all->revision + 1,
                       [this](const cluster::WatchBatch& b) { on_batch(b); });
    if (!w.ok()) return w.status();
    watch_ = std::move(*w);
    return creds;
  }

  // A key and value under dir_ as a change (a deletion when `value` is empty); nullopt and a
  // log line for a key or value that does not decode (never applied).
  std::optional<ScramChange> decode(const cluster::KeyValue& kv, bool deleted = false) const {
    std::string_view rest = std::string_view(kv.key).substr(dir_.size());
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

  void on_batch(const cluster::WatchBatch& batch) {
    if (batch.compact_revision > 0) {
      spdlog::warn("SCRAM credentials: etcd history compacted at revision {}; re-reading",
                   batch.compact_revision);
      std::lock_guard guard(rewatch_mu_);
      if (rewatch_.joinable()) rewatch_.join();
      rewatch_ = std::thread([this] {
        for (int attempt = 0;; ++attempt) {
          {
            std::lock_guard lk(watch_mu_);
            if (stopped_) return;
            std::unique_ptr<cluster::Watch> old = std::move(watch_);
            if (old) old->cancel();
            auto st = load_and_watch();
            if (st.ok()) return;
            spdlog::warn("SCRAM credentials: re-read failed ({}); retrying",
                         st.status().to_string());
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(100 << std::min(attempt, 4)));
        }
      });
      return;
    }
    int64_t rev = batch.revision;
    for (const auto& e : batch.events) {
      if (auto c = decode(e.kv, e.type == cluster::WatchEvent::Type::del)) {
        store_.set(c->user, c->mechanism, c->credential);
      }
      rev = std::max(rev, e.kv.mod_revision);
    }
    advance(rev);
  }

  void advance(int64_t revision) {
    {
      std::lock_guard lk(rev_mu_);
      applied_ = std::max(applied_, revision);
    }
    rev_cv_.notify_all();
  }

  void wait_for(int64_t revision) {
    std::unique_lock lk(rev_mu_);
    if (!rev_cv_.wait_for(lk, kWatchWait, [&] { return applied_ >= revision; })) {
      spdlog::warn("SCRAM credentials: this broker's copy has not seen revision {} yet", revision);
    }
  }

  ScramStore& store_;
  cluster::Coordination& co_;
  const std::string dir_;
  std::mutex watch_mu_;
  std::unique_ptr<cluster::Watch> watch_;
  bool stopped_ = false;
  std::mutex rewatch_mu_;
  std::thread rewatch_;
  std::mutex rev_mu_;
  std::condition_variable rev_cv_;
  int64_t applied_ = 0;
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
