// FileAclAuthorizer and ClusterAclAuthorizer (see acl_authorizer.h).
#include "broker/security/acl_authorizer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "broker/cluster/coordination.h"
#include "broker/cluster/prefix_follower.h"
#include "broker/security/acl_text.h"
#include "storage/env.h"
#include "storage/file_util.h"

namespace strata::broker::security {
namespace {

constexpr const char* kFileName = "acls";
// How long a change waits for this broker's watch to deliver it before answering anyway.
constexpr auto kApplyTimeout = std::chrono::seconds(10);

// The bindings a filter names exactly (one binding), for removing a single watched deletion.
AclFilter exact(const AclBinding& b) {
  AclFilter f;
  f.resource_type = b.resource_type;
  f.resource_name = b.resource_name;
  f.pattern = b.pattern;
  f.principal = b.principal;
  f.host = b.host;
  f.operation = b.operation;
  f.permission = b.permission;
  return f;
}

std::string to_json(const AclBinding& b) {
  nlohmann::json j = {{"resource_type", name_of(b.resource_type)},
                      {"resource_name", b.resource_name},
                      {"pattern_type", name_of(b.pattern)},
                      {"principal", b.principal},
                      {"host", b.host},
                      {"operation", name_of(b.operation)},
                      {"permission_type", name_of(b.permission)}};
  return j.dump();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// FileAclAuthorizer

Result<std::unique_ptr<FileAclAuthorizer>> FileAclAuthorizer::open(storage::Env* env,
                                                                   const std::string& dir,
                                                                   AuthorizerConfig config) {
  std::unique_ptr<FileAclAuthorizer> a(
      new FileAclAuthorizer(env, storage::join_path(dir, kFileName), std::move(config)));
  auto lines = storage::read_line_file(env, a->path_);
  if (!lines.ok()) return lines.status();
  std::vector<AclBinding> all;
  for (const auto& line : *lines) {
    auto b = decode_line(line);
    if (!b) return Status(Errc::corruption, a->path_ + ": malformed ACL line: " + line);
    all.push_back(std::move(*b));
  }
  a->store_.reset(all);
  return a;
}

Status FileAclAuthorizer::persist(const std::vector<AclBinding>& all) const {
  std::string text =
      "# ACLs (CreateAcls / DeleteAcls): resource type, pattern, name, principal, host, "
      "operation, permission\n";
  for (const auto& b : all) text.append(encode_line(b)).append("\n");
  return storage::write_file_atomically(env_, path_, text);
}

Status FileAclAuthorizer::create(const std::vector<AclBinding>& bindings) {
  std::lock_guard wl(write_mu_);
  std::vector<AclBinding> all = store_.list(AclFilter{});
  const size_t before = all.size();
  for (const auto& b : bindings) {
    if (!std::binary_search(all.begin(), all.begin() + static_cast<ptrdiff_t>(before), b)) {
      all.push_back(b);
    }
  }
  if (all.size() == before) return Status::Ok();  // all present already
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  STRATA_RETURN_IF_ERROR(persist(all));
  store_.add(bindings);
  return Status::Ok();
}

Result<std::vector<AclBinding>> FileAclAuthorizer::remove(const AclFilter& filter) {
  std::lock_guard wl(write_mu_);
  std::vector<AclBinding> all = store_.list(AclFilter{});
  std::vector<AclBinding> kept;
  for (const auto& b : all) {
    if (!filter.matches(b)) kept.push_back(b);
  }
  if (kept.size() == all.size()) return std::vector<AclBinding>{};
  STRATA_RETURN_IF_ERROR(persist(kept));
  return store_.remove(filter);
}

// ---------------------------------------------------------------------------------------------
// ClusterAclAuthorizer

ClusterAclAuthorizer::ClusterAclAuthorizer(cluster::Coordination& coordination, std::string dir,
                                           AuthorizerConfig config)
    : AclAuthorizer(std::move(config)), coordination_(coordination), dir_(std::move(dir)) {
  cluster::PrefixFollower::Handlers handlers;
  handlers.reset = [this](const cluster::RangeResult& all) {
    std::vector<AclBinding> bindings;
    for (const auto& kv : all.kvs) {
      if (auto b = decode_key(kv.key)) bindings.push_back(std::move(*b));
    }
    store_.reset(bindings);
  };
  handlers.apply = [this](const std::vector<cluster::WatchEvent>& events) {
    for (const auto& e : events) {
      auto b = decode_key(e.kv.key);
      if (!b) continue;
      if (e.type == cluster::WatchEvent::Type::put) {
        store_.add({*b});
      } else {
        store_.remove(exact(*b));
      }
    }
  };
  follower_ =
      std::make_unique<cluster::PrefixFollower>(coordination_, dir_, std::move(handlers), "ACLs");
}

ClusterAclAuthorizer::~ClusterAclAuthorizer() { stop(); }

std::string ClusterAclAuthorizer::encode_key(const AclBinding& b) { return encode_line(b); }

Result<std::unique_ptr<ClusterAclAuthorizer>> ClusterAclAuthorizer::open(
    cluster::Coordination& coordination, const std::string& prefix, AuthorizerConfig config) {
  std::string p = prefix;
  while (!p.empty() && p.back() == '/') p.pop_back();
  std::unique_ptr<ClusterAclAuthorizer> a(
      new ClusterAclAuthorizer(coordination, p + "/acls/", std::move(config)));
  STRATA_RETURN_IF_ERROR(a->follower_->start());
  return a;
}

void ClusterAclAuthorizer::stop() { follower_->stop(); }

std::optional<AclBinding> ClusterAclAuthorizer::decode_key(const std::string& key) const {
  auto b = decode_line(follower_->relative(key));
  if (!b) spdlog::error("ACLs: ignoring undecodable etcd key {}", key);
  return b;
}

Status ClusterAclAuthorizer::wait_for(int64_t revision) {
  if (!follower_->wait_for(revision, kApplyTimeout)) {
    return Status(Errc::unavailable, "ACL change written to etcd but not yet seen by this broker");
  }
  return Status::Ok();
}

Status ClusterAclAuthorizer::create(const std::vector<AclBinding>& bindings) {
  std::lock_guard wl(write_mu_);
  std::vector<cluster::TxnOp> puts;
  for (const auto& b : bindings) puts.push_back(cluster::TxnOp::put(key_of(b), to_json(b)));
  if (puts.empty()) return Status::Ok();
  auto r = coordination_.txn({}, puts, {});
  if (!r.ok()) return r.status();
  return wait_for(r->revision);
}

Result<std::vector<AclBinding>> ClusterAclAuthorizer::remove(const AclFilter& filter) {
  std::lock_guard wl(write_mu_);
  std::vector<AclBinding> matching = store_.list(filter);
  if (matching.empty()) return matching;
  std::vector<cluster::TxnOp> dels;
  for (const auto& b : matching) dels.push_back(cluster::TxnOp::del(key_of(b)));
  auto r = coordination_.txn({}, dels, {});
  if (!r.ok()) return r.status();
  STRATA_RETURN_IF_ERROR(wait_for(r->revision));
  return matching;
}

}  // namespace strata::broker::security
