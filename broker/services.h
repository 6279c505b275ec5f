// Services: what request handlers, the log tasks and the metrics scrape use of the broker — its
// long-lived services and its identity, and nothing of its lifecycle. Broker (broker/broker.h) owns
// every service, fills this once in start() before the listeners accept, and keeps it valid until
// run() returns; only main.cc and tests need Broker itself. Readers may use it from any thread
// (each service states its own thread safety).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/config.h"

namespace strata::broker {

class DynamicConfig;
class TopicRegistry;
class PkTables;
class ScanSessions;
class PartitionWatchers;
class ProducerIdManager;
namespace group {
class GroupCoordinator;
class LogGroupJournal;
}  // namespace group
namespace metrics {
class BrokerMetrics;
}
namespace quota {
class ClientQuotas;
}
namespace cluster {
class ClusterNode;
}
namespace txn {
class TxnCoordinator;
class TxnOffsetForwarder;
}  // namespace txn
namespace security {
class Authorizer;
class CredentialStore;
class SaslAuthenticator;
class ScramStore;
class TlsReloader;
}  // namespace security

struct Services {
  const BrokerConfig& config;          // static config (server.properties + overrides at start)
  DynamicConfig& dynamic_config;       // config() plus durable AlterConfigs overrides
  TopicRegistry& topics;               // topics and their partition logs
  PkTables& pk_tables;                 // primary-key table states
  ScanSessions& scan_sessions;         // open Scans
  PartitionWatchers& watchers;         // long-poll registrations on partition logs
  group::GroupCoordinator& groups;     // consumer groups and committed offsets
  ProducerIdManager& producer_ids;     // idempotent-producer ids
  quota::ClientQuotas& quotas;         // client quotas: durable config + throttling
  metrics::BrokerMetrics& metrics;     // request and topic counters
  const std::atomic<bool>& stopping_;  // set once a graceful stop began

  int32_t node_id = 0;
  std::string cluster_id;
  // The address other brokers and tools reach this broker at (the inter-broker listener's).
  Listener advertised;
  // Every listener's advertised address (advertised.listeners, else the bound one): a client is
  // told the addresses of the listener it came in on, as Kafka does.
  std::vector<Listener> advertised_listeners;
  const Listener& advertised_for(const std::string& listener) const {
    for (const auto& l : advertised_listeners) {
      if (l.name == listener) return l;
    }
    return advertised;
  }
  // Cluster mode (broker/cluster/cluster_node.h): leadership, ISR and the cluster's view; null on
  // a single node, where this broker leads every partition.
  cluster::ClusterNode* cluster = nullptr;
  // The transaction coordinator (broker/txn/txn_coordinator.h); null in cluster mode, where the
  // transaction APIs answer COORDINATOR_NOT_AVAILABLE.
  txn::TxnCoordinator* txns = nullptr;
  // The consumer-offsets topic behind `groups` (FindCoordinator creates it in cluster mode).
  group::LogGroupJournal* offsets_topic = nullptr;
  // The transaction-state topic behind `txns` (null with it).
  group::LogGroupJournal* txn_state_topic = nullptr;
  // Cluster: TxnOffsetCommit forwarded to the transaction's coordinator (null on a single node).
  txn::TxnOffsetForwarder* txn_forwarder = nullptr;
  // The journal of an internal topic (is_internal_topic), null when this broker has none.
  group::LogGroupJournal* internal_topic_journal(std::string_view topic) const;
  // broker/security/security_services.h. authorizer: null = no authorizer configured (everything
  // is allowed). credentials: the SCRAM store SaslAuthenticate checks; null = no SCRAM users.
  security::Authorizer* authorizer = nullptr;
  const security::CredentialStore* credentials = nullptr;
  // SASL listeners' mechanisms and exchanges; null when no listener uses SASL.
  const security::SaslAuthenticator* sasl = nullptr;
  // The store behind `credentials`, for DescribeUserScramCredentials / AlterUserScramCredentials.
  security::ScramStore* scram = nullptr;
  // The TLS listeners' contexts, replaced when AlterConfigs changes their key or trust stores.
  const security::TlsReloader* tls_reloader = nullptr;

  bool stopping() const { return stopping_.load(); }
};

// Milliseconds since the epoch (wall clock), as Kafka timestamps are.
int64_t now_ms();

}  // namespace strata::broker
