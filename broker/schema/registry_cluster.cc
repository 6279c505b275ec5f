#include "broker/schema/registry_cluster.h"

#include <spdlog/spdlog.h>
#include <strings.h>

#include <chrono>
#include <thread>

#include "broker/cluster/cluster_node.h"
#include "broker/group/log_group_journal.h"
#include "broker/net/http_client.h"
#include "broker/schema/registry_http.h"
#include "broker/schema/schema_registry.h"

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
                               cluster::ClusterNode& cluster, int32_t self, int64_t wait_ms)
    : registry_(registry), journal_(journal), cluster_(cluster), self_(self), wait_ms_(wait_ms) {}

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

Status RegistryRouter::ensure_loaded(int32_t epoch) {
  std::lock_guard l(mu_);
  if (loaded_epoch_ == epoch) return Status::Ok();
  STRATA_RETURN_IF_ERROR(registry_.reload());
  loaded_epoch_ = epoch;
  spdlog::info("schema registry: this broker is the writer (leader epoch {} of {}), {} subjects",
               epoch, kSchemasTopic, registry_.subjects(false).size());
  return Status::Ok();
}

HttpResponse RegistryRouter::handle(const HttpRequest& req) {
  const bool forwarded = !req.header(kForwardedHeader).empty();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms_);
  std::string why;
  for (;;) {
    const Writer w = writer(why);
    if (w.id == self_) {
      if (Status st = ensure_loaded(w.epoch); !st.ok()) {
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
    if (w.id >= 0) {
      HttpRequest out = req;
      out.headers.emplace_back(kForwardedHeader, std::to_string(self_));
      auto r = http_call(w.host, w.port, out);
      if (r.ok() && !has_header(*r, kNotWriterHeader)) return std::move(*r);
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

}  // namespace strata::broker::schema
