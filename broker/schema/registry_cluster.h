// The Schema Registry in cluster mode: every broker serves the REST API on its
// schema.registry.listener, and one of them holds the state — the leader of `_schemas`
// partition 0, replicated like any topic (schema.registry.topic.replication.factor). That writer
// answers from memory, rebuilt from its replica whenever it becomes the leader (a new leader
// epoch), so ids stay unique across failovers: every committed record is in the new leader's
// log. Every other broker forwards each request to the writer's registry endpoint (published in
// its etcd registration) and relays the answer, as Confluent's followers forward to their leader.
// Reads (GET, and the POST lookups that change nothing) are the exception: a broker holding a
// replica of `_schemas` answers them from a copy of its replica's committed records (rebuilt
// when its high watermark moves), at once and while there is no writer at all (a failover). A
// 404 of the copy is never final — an acknowledged write may lie past the high watermark the
// replica knows (it learns it with its next fetch) — so the writer is asked, and waited for;
// for 2 s after relaying a write a broker asks the writer first (its copy may not have it yet).
// While the topic is being created or has no leader, or the writer cannot be reached, any other
// request waits (up to `wait_ms`) and then gets 50003; a request that was already forwarded is
// never forwarded again (a stale view on both ends answers 50003 at once, and the first broker
// retries). Thread-safe (the HTTP server's threads).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "broker/net/http_server.h"
#include "broker/schema/table_schema.h"

namespace strata::broker {
namespace cluster {
class ClusterNode;
}
namespace group {
class LogGroupJournal;
}
}  // namespace strata::broker

namespace strata::broker::schema {

class SchemaRegistry;

// The etcd registration's endpoint name of a broker's registry listener ("host:port"); not a
// valid Kafka listener name, so it never meets one.
inline constexpr const char* kRegistryEndpoint = "schema.registry";

class RegistryRouter {
 public:
  // `forward_tls`: the client context for writers' https:// endpoints (null: plain HTTP).
  // `forward_key`: vouches for a forwarded request's client address (registry_access.h).
  RegistryRouter(SchemaRegistry& registry, group::LogGroupJournal& journal,
                 cluster::ClusterNode& cluster, int32_t self, int64_t wait_ms = 10000,
                 std::shared_ptr<boost::asio::ssl::context> forward_tls = nullptr,
                 std::string forward_key = {});
  HttpResponse handle(const HttpRequest& req) { return handle(req, wait_ms_, false, true); }
  // Waits at most `wait_ms` for a writer (forwarding included). `fail_fast` (the produce path's
  // schema reads): while this broker, just made the writer, is still rebuilding its memory,
  // answer 50003 at once instead of waiting for the rebuild. `copy`: a read may be answered
  // from this broker's copy (false for what must be the newest: a subject's latest version).
  HttpResponse handle(const HttpRequest& req, int64_t wait_ms, bool fail_fast, bool copy);

 private:
  struct Writer {
    int32_t id = -1;
    std::string topic_id;  // with the epoch: which leadership (a recreated topic starts again)
    int32_t epoch = -1;
    std::string host;
    uint16_t port = 0;
  };
  // The writer in this broker's view, or id -1 with `why`.
  Writer writer(std::string& why);
  // Rebuilds the registry's memory once per leadership of this broker (topic id, leader
  // epoch). Errc::unavailable with `fail_fast` while another thread rebuilds it.
  Status ensure_loaded(const Writer& w, bool fail_fast);
  // A read answered from this broker's copy, rebuilt first when the replica's high watermark
  // moved; nullopt when it holds no replica of `_schemas`, cannot read it, or (`fail_fast`)
  // another thread is rebuilding.
  std::optional<HttpResponse> serve_copy(const HttpRequest& req, bool fail_fast);
  static bool is_read(const HttpRequest& req);

  SchemaRegistry& registry_;
  group::LogGroupJournal& journal_;
  cluster::ClusterNode& cluster_;
  const int32_t self_;
  const int64_t wait_ms_;
  const std::shared_ptr<boost::asio::ssl::context> forward_tls_;
  const std::string forward_key_;
  std::mutex mu_;
  std::string loaded_topic_id_;  // guarded by mu_
  int32_t loaded_epoch_ = -1;    // guarded by mu_
  int64_t copy_hw_ = -1;         // guarded by mu_: the copy's high watermark (-1: no copy)
  std::atomic<int64_t> relayed_write_at_ms_{-1};  // steady clock: the last write relayed
};

// Typed tables' schemas in a cluster, read through the router as a client would (from this
// broker's memory when it is the writer, else from the writer): an id's schema is cached once
// read — it never changes — and an id the writer does not know is not asked again for a second,
// so a producer sending garbage ids costs one request per second, not one per record. A read
// waits at most 2 s for a writer (a produce waits with it), then the record is refused; after
// that the writer counts as unreachable for a second (the rest of a batch fails at once).
// `authorization`: the Authorization header these reads carry to the writer (the inter-broker
// user's basic auth when the registry requires authentication; "" = none).
std::unique_ptr<SchemaSource> forwarded_schema_source(RegistryRouter& router,
                                                      std::string authorization = {});

}  // namespace strata::broker::schema
