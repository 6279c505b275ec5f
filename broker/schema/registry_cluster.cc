#include "broker/schema/registry_cluster.h"

#include <spdlog/spdlog.h>
#include <strings.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker/cluster/cluster_node.h"
#include "broker/group/log_group_journal.h"
#include "broker/net/http_client.h"
#include "broker/schema/registry_access.h"
#include "broker/schema/registry_http.h"
#include "broker/schema/registry_parse.h"
#include "broker/schema/schema_registry.h"
#include "broker/topics/topic_registry.h"
#include "protocol/base/percent_escape.h"
#include "storage/partition_log.h"

namespace strata::broker::schema {

namespace {
// Set on a forwarded request (the forwarding broker's id): its receiver answers or refuses,
// never forwards again.
constexpr const char* kForwardedHeader = "x-strata-registry-forwarded";
// Set on the refusal of a forwarded request by a broker that is not the writer (any more): the
// forwarding broker looks for the writer again instead of relaying it.
constexpr const char* kNotWriterHeader = "x-strata-registry-not-writer";
constexpr auto kRetryPause = std::chrono::milliseconds(100);

bool has_header(const HttpResponse& r, const char* name) {
  for (const auto& [n, v] : r.headers) {
    if (strcasecmp(n.c_str(), name) == 0) return true;
  }
  return false;
}
}  // namespace

RegistryRouter::RegistryRouter(SchemaRegistry& registry, group::LogGroupJournal& journal,
                               cluster::ClusterNode& cluster, int32_t self, int64_t wait_ms,
                               std::shared_ptr<boost::asio::ssl::context> forward_tls,
                               std::string forward_key)
    : registry_(registry),
      journal_(journal),
      cluster_(cluster),
      self_(self),
      wait_ms_(wait_ms),
      forward_tls_(std::move(forward_tls)),
      forward_key_(std::move(forward_key)) {}

RegistryRouter::Writer RegistryRouter::writer(std::string& why) {
  auto snap = cluster_.snapshot();
  Writer w;
  if (!snap) {
    why = "the cluster's state is not read yet";
    return w;
  }
  if (!snap->topics.count(kSchemasTopic)) {
    journal_.request_cluster_topic();  // created once enough brokers live
    why = std::string(kSchemasTopic) + " is being created";
    return w;
  }
  const auto* p = snap->partition(kSchemasTopic, 0);
  if (!p || p->state.leader < 0) {
    why = std::string(kSchemasTopic) + " has no leader";
    return w;
  }
  w.epoch = p->state.leader_epoch;
  w.topic_id = snap->topics.at(kSchemasTopic).topic_id;
  if (p->state.leader == self_) {
    w.id = self_;
    return w;
  }
  auto b = snap->brokers.find(p->state.leader);
  const auto e = b == snap->brokers.end() ? std::map<std::string, std::string>::const_iterator{}
                                          : b->second.endpoints.find(kRegistryEndpoint);
  if (b == snap->brokers.end() || e == b->second.endpoints.end()) {
    why = "the writer, broker " + std::to_string(p->state.leader) + ", serves no registry";
    return w;
  }
  const size_t colon = e->second.rfind(':');
  int port = 0;
  if (colon != std::string::npos) port = std::atoi(e->second.c_str() + colon + 1);
  if (port <= 0 || port > 65535) {
    why = "broker " + std::to_string(p->state.leader) + " registered no registry port";
    return w;
  }
  w.id = p->state.leader;
  w.host = e->second.substr(0, colon);
  w.port = static_cast<uint16_t>(port);
  return w;
}

Status RegistryRouter::ensure_loaded(const Writer& w, bool fail_fast) {
  std::unique_lock l(mu_, std::defer_lock);
  if (fail_fast) {
    if (!l.try_lock()) return Status(Errc::unavailable, "the registry's writer is loading");
  } else {
    l.lock();
  }
  if (loaded_epoch_ == w.epoch && loaded_topic_id_ == w.topic_id) return Status::Ok();
  copy_hw_ = -1;  // memory is the writer's from here on
  STRATA_RETURN_IF_ERROR(registry_.reload());
  loaded_topic_id_ = w.topic_id;
  loaded_epoch_ = w.epoch;
  spdlog::info("schema registry: this broker is the writer (leader epoch {} of {}), {} subjects",
               w.epoch, kSchemasTopic, registry_.subjects(false).size());
  return Status::Ok();
}

bool RegistryRouter::is_read(const HttpRequest& req) {
  if (req.method == "GET" || req.method == "HEAD") return true;
  if (req.method != "POST") return false;
  // POST /subjects/{s} (is this schema registered?) changes nothing, and its "not registered" is
  // a 404, which the writer confirms. A compatibility check is left to the writer: it refuses
  // (422) a reference the copy may not know yet.
  constexpr std::string_view kSubjects = "/subjects/";
  const std::string_view p = req.path;
  return p.starts_with(kSubjects) && p.size() > kSubjects.size() &&
         p.find('/', kSubjects.size()) == std::string_view::npos;
}

std::optional<HttpResponse> RegistryRouter::serve_copy(const HttpRequest& req, bool fail_fast) {
  {
    std::unique_lock l(mu_, std::defer_lock);
    if (fail_fast) {
      if (!l.try_lock()) return std::nullopt;
    } else {
      l.lock();
    }
    // Only an in-sync replica that has heard the high watermark since it opened: a replica out
    // of the ISR (lagging, removed) stops learning it, and a just-opened one knows only its log
    // start — its copy would answer an empty or old registry as if it were the truth.
    auto snap = cluster_.snapshot();
    const auto* p = snap ? snap->partition(kSchemasTopic, 0) : nullptr;
    if (!p || std::find(p->state.isr.begin(), p->state.isr.end(), self_) == p->state.isr.end()) {
      return std::nullopt;
    }
    auto topic = journal_.local_topic(false);
    storage::PartitionLog* log = topic ? topic->partition(0) : nullptr;
    if (!log || !log->high_watermark_known()) return std::nullopt;
    if (loaded_epoch_ >= 0 || copy_hw_ != log->high_watermark()) {
      int64_t hw = -1;
      Status st = registry_.rebuild([&](const auto& apply) -> Status {
        auto r = journal_.replay_committed(0, apply);
        if (!r.ok()) return r.status();
        hw = *r;
        return Status::Ok();
      });
      loaded_epoch_ = -1;  // not the writer's memory any more
      loaded_topic_id_.clear();
      if (!st.ok()) {
        copy_hw_ = -1;
        spdlog::warn("schema registry: cannot read this broker's copy of {}: {}", kSchemasTopic,
                     st.to_string());
        return std::nullopt;
      }
      copy_hw_ = hw;
    }
  }
  return handle_registry_request(registry_, req);
}

HttpResponse RegistryRouter::handle(const HttpRequest& req, int64_t wait_ms, bool fail_fast,
                                    bool copy) {
  const bool forwarded = !req.header(kForwardedHeader).empty();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  const auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const bool read = copy && is_read(req);
  // Reads: the copy answers first, unless this broker relayed a write in the last 2 s (then the
  // writer does, when it can), and whenever no writer can answer. Its 404 is never final: the
  // copy holds what its replica knows to be committed, and an acknowledged write may be past
  // that (a follower learns the high watermark with its next fetch), so the writer is asked,
  // and without one the request waits for it as any other.
  const bool copy_first = read && !forwarded && now_ms() - relayed_write_at_ms_.load() > 2000;
  bool copy_tried = false;
  std::optional<HttpResponse> copy_answer;
  const auto from_copy = [&]() -> std::optional<HttpResponse>& {
    if (read && !forwarded && !copy_tried) {
      copy_tried = true;
      copy_answer = serve_copy(req, fail_fast);
    }
    return copy_answer;
  };
  std::string why;
  for (;;) {
    const Writer w = writer(why);
    if (w.id == self_) {
      if (Status st = ensure_loaded(w, fail_fast); !st.ok()) {
        if (st.code() == Errc::unavailable) {
          return registry_error_response(500, 50003, st.message());
        }
        return registry_error_response(500, 50001,
                                       "Error while reading the schemas topic: " + st.message());
      }
      return handle_registry_request(registry_, req);
    }
    if (forwarded) {  // the forwarding broker's view is stale, or ours is: it looks again
      HttpResponse r = registry_error_response(
          500, 50003, "broker " + std::to_string(self_) + " is not the registry's writer");
      r.headers.emplace_back(kNotWriterHeader, "1");
      return r;
    }
    if (copy_first) {
      if (auto& local = from_copy(); local && local->status != 404) return std::move(*local);
    }
    if (w.id < 0) {  // no writer to ask
      if (auto& local = from_copy(); local && local->status != 404) return std::move(*local);
    }
    if (w.id >= 0) {
      HttpRequest out = req;
      out.headers.emplace_back(kForwardedHeader, std::to_string(self_));
      std::erase_if(out.headers, [](const auto& h) { return h.first == kForwardedClientHeader; });
      if (std::string v = vouch_for_client(forward_key_, req); !v.empty()) {
        out.headers.emplace_back(kForwardedClientHeader, std::move(v));
      }
      // Bounded by what is left of the wait (a writer that accepts and hangs costs no more).
      const int64_t left =
          std::max<int64_t>(100, std::chrono::duration_cast<std::chrono::milliseconds>(
                                     deadline - std::chrono::steady_clock::now())
                                     .count());
      auto r =
          http_call(w.host, w.port, out,
                    HttpCallOptions{std::min<int64_t>(left, 2000), left, 16u << 20, forward_tls_});
      if (r.ok() && !has_header(*r, kNotWriterHeader)) {
        if (!read && r->status < 300) relayed_write_at_ms_ = now_ms();
        return std::move(*r);
      }
      if (auto& local = from_copy(); local && local->status != 404) {
        return std::move(*local);  // the writer cannot answer
      }
      if (!r.ok() && r.status().code() != Errc::io_error) {
        // Sent, but no answer came back: a write may have happened; the client decides.
        return registry_error_response(
            500, 50003,
            "Error while forwarding the request to the registry's writer: " + r.status().message());
      }
      why = r.ok() ? "the writer moved" : r.status().message();
    }
    if (std::chrono::steady_clock::now() + kRetryPause > deadline) {
      return registry_error_response(
          500, 50003, "Error while forwarding the request to the registry's writer: " + why);
    }
    std::this_thread::sleep_for(kRetryPause);
  }
}

namespace {

using nlohmann::json;

// A path segment percent-encoded (subjects may hold any character).
std::string segment(const std::string& s) { return percent_escape(s, url_unreserved); }

Result<SchemaEntry> entry_of(const json& j, int32_t id) {
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string()) {
    return Status(Errc::corruption, "the registry's answer holds no schema");
  }
  SchemaEntry e;
  e.id = j.contains("id") && j["id"].is_number_integer() ? j["id"].get<int32_t>() : id;
  e.schema = j["schema"];
  if (j.contains("schemaType") && j["schemaType"].is_string()) e.type = j["schemaType"];
  if (j.contains("references") && j["references"].is_array()) {
    for (const auto& r : j["references"]) {
      if (!r.is_object() || !r.contains("name") || !r.contains("subject") ||
          !r.contains("version") || !r["name"].is_string() || !r["subject"].is_string() ||
          !r["version"].is_number_integer()) {
        return Status(Errc::corruption, "the registry's answer holds a malformed reference");
      }
      e.references.push_back({r["name"], r["subject"], r["version"].get<int32_t>()});
    }
  }
  return e;
}

class ForwardedSchemaSource : public SchemaSource {
 public:
  ForwardedSchemaSource(RegistryRouter& router, std::string authorization)
      : router_(router), authorization_(std::move(authorization)) {}

  Result<std::shared_ptr<const detail::ParsedSchema>> parsed(int32_t id) const override {
    {
      std::lock_guard l(mu_);
      if (auto it = parsed_.find(id); it != parsed_.end()) return it->second;
    }
    auto e = entry(id);
    if (!e.ok()) return e.status();
    std::deque<SchemaEntry> refs;  // stable addresses while the parser holds them
    Status ref_error = Status::Ok();
    const std::function<const SchemaEntry*(const SchemaReference&)> find =
        [&](const SchemaReference& ref) -> const SchemaEntry* {
      // A numbered version never changes (the copy may answer it); the latest is the writer's.
      auto j = get("/subjects/" + segment(ref.subject) + "/versions/" +
                       (ref.version < 0 ? std::string("latest") : std::to_string(ref.version)),
                   /*copy=*/ref.version >= 0);
      auto r = j.ok() ? entry_of(*j, 0) : Result<SchemaEntry>(j.status());
      if (!r.ok()) {
        if (ref_error.ok()) ref_error = r.status();
        return nullptr;
      }
      refs.push_back(std::move(*r));
      return &refs.back();
    };
    auto p = detail::SchemaParser{find}.parse(e->type, e->schema, e->references, 0);
    if (!ref_error.ok() && ref_error.code() == Errc::unavailable) return ref_error;
    if (!p.ok()) {
      return Status(Errc::invalid_argument,
                    "schema id " + std::to_string(id) + ": " + p.status().message());
    }
    auto shared = std::make_shared<const detail::ParsedSchema>(std::move(*p));
    std::lock_guard l(mu_);
    return parsed_.emplace(id, std::move(shared)).first->second;
  }

  Result<SchemaEntry> entry(int32_t id) const override {
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard l(mu_);
      if (auto it = entries_.find(id); it != entries_.end()) return it->second;
      if (auto it = missing_.find(id); it != missing_.end() && it->second > now) {
        return Status(Errc::not_found, "schema id " + std::to_string(id) + " is not registered");
      }
    }
    auto j = get("/schemas/ids/" + std::to_string(id), /*copy=*/true);
    if (!j.ok()) {
      if (j.status().code() == Errc::not_found) {
        std::lock_guard l(mu_);
        if (missing_.size() > 10000) missing_.clear();
        missing_[id] = now + std::chrono::seconds(1);
      }
      return j.status();
    }
    auto e = entry_of(*j, id);
    if (!e.ok()) return e.status();
    std::lock_guard l(mu_);
    return entries_.emplace(id, std::move(*e)).first->second;
  }

  Result<std::shared_ptr<const detail::ParsedSchema>> parsed_at_hand(int32_t id) const override {
    std::lock_guard l(mu_);
    if (auto it = parsed_.find(id); it != parsed_.end()) return it->second;
    return not_at_hand(id);
  }
  Result<SchemaEntry> entry_at_hand(int32_t id) const override {
    std::lock_guard l(mu_);
    if (auto it = entries_.find(id); it != entries_.end()) return it->second;
    return not_at_hand(id);
  }

  Result<SchemaEntry> latest(const std::string& subject) const override {
    // A table pins its schema's latest version: the writer's, never a copy's (which may lag).
    auto j = get("/subjects/" + segment(subject) + "/versions/latest", /*copy=*/false);
    if (!j.ok()) return j.status();
    return entry_of(*j, 0);
  }

 private:
  static Status not_at_hand(int32_t id) {
    return Status(Errc::unavailable, "schema id " + std::to_string(id) +
                                         " has not been read from the registry's writer yet");
  }

  // GET through the router; a 404 is not_found, another error unavailable, with its message.
  Result<json> get(const std::string& path, bool copy) const {
    HttpRequest req;
    req.method = "GET";
    req.path = path;
    if (!authorization_.empty()) req.headers.emplace_back("authorization", authorization_);
    if (std::chrono::steady_clock::now() < unreachable_until_.load()) {
      return Status(Errc::unavailable, "the registry's writer is not reachable (retry)");
    }
    const HttpResponse a = router_.handle(req, 2000, /*fail_fast=*/true, copy);
    json j = json::parse(a.body, nullptr, false);
    if (a.status == 200) return j;
    std::string message = j.is_object() && j.contains("message") && j["message"].is_string()
                              ? j["message"].get<std::string>()
                              : "HTTP " + std::to_string(a.status);
    if (a.status != 404 && a.status != 401 && a.status != 403) {
      unreachable_until_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    }
    // Refused credentials or rights (this broker's inter-broker login) do not pass with time:
    // what the writer answers with them is an error of the request, not an outage.
    const Errc code = a.status == 404                      ? Errc::not_found
                      : a.status == 401 || a.status == 403 ? Errc::invalid_argument
                                                           : Errc::unavailable;
    return Status(code, std::move(message));
  }

  RegistryRouter& router_;
  const std::string authorization_;
  mutable std::mutex mu_;
  mutable std::map<int32_t, SchemaEntry> entries_;
  mutable std::map<int32_t, std::shared_ptr<const detail::ParsedSchema>> parsed_;
  mutable std::map<int32_t, std::chrono::steady_clock::time_point> missing_;
  mutable std::atomic<std::chrono::steady_clock::time_point> unreachable_until_{};
};

}  // namespace

std::unique_ptr<SchemaSource> forwarded_schema_source(RegistryRouter& router,
                                                      std::string authorization) {
  return std::make_unique<ForwardedSchemaSource>(router, std::move(authorization));
}

}  // namespace strata::broker::schema
