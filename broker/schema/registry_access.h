// Who may do what on the Schema Registry, with the broker's own users and ACLs — so one
// `kafka-acls` grant covers a topic and its schemas, and existing admin tools manage both.
//
// Authentication (schema.registry.authentication.method=basic): HTTP basic auth against the
// broker's SCRAM users (security/password_check.h); the principal is User:<name>. Without it the
// principal is User:ANONYMOUS, as on a Kafka listener without SASL.
//
// Authorization (when the broker has an authorizer, authorizer.class.name): a subject is governed
// by the ACLs of the topic it belongs to — the subject without its `-key` / `-value` suffix
// (TopicNameStrategy), else the part before its last '-' (TopicRecordNameStrategy: record names
// have no '-'), else the whole subject (RecordNameStrategy) — as Confluent's topic-based
// authorizer does. Reading a subject (its versions, schemas, lookups, compatibility checks) needs
// DESCRIBE on that topic (implied by READ and WRITE; the brokers' own principal — the inter-broker
// user — has it too, to decode typed tables' values); registering a schema needs WRITE; deleting
// a version or subject needs DELETE; its config and mode are read with DESCRIBE (KafkaJS's client
// reads them before registering) or DESCRIBE_CONFIGS, and changed with ALTER_CONFIGS.
// The global config and mode: any principal reads them, changing them needs ALTER_CONFIGS on the
// cluster. A schema by id: DESCRIBE on some subject that uses or used it (soft-deleted versions
// count: deserializers still meet their ids). Listings (GET /subjects, the
// subjects and versions of an id) leave out what the principal may not describe. Super users
// pass every check. A denial answers 403 with error code 40301 and is logged (at most one line a
// second per principal and operation).
//
// In a cluster the broker a client reached checks it, and the writer checks a forwarded request
// again (same credentials, same ACLs) with the client's address, which the forwarding broker
// vouches for in a header: an HMAC keyed by a secret every broker derives from the inter-broker
// password. Without that key the writer sees the forwarding broker's address.
#pragma once

#include <optional>
#include <string>

#include "broker/net/http_server.h"

namespace strata::broker::security {
class Authorizer;
}

namespace strata::broker::schema {

// The topic whose ACLs govern `subject`.
std::string subject_topic(const std::string& subject);

// `inner` (the registry's routes, or the cluster's router) behind the authorizer's checks;
// `authorizer` null = `inner` itself. Both outlive the handler. `forward_key`: see below.
// `broker_principal` ("User:<inter-broker user>", "" = none) describes every subject.
HttpHandler authorized_registry(HttpHandler inner, const security::Authorizer* authorizer,
                                std::string forward_key = {}, std::string broker_principal = {});

// The header a forwarded request carries: "<client host> <hex HMAC>".
inline constexpr const char* kForwardedClientHeader = "x-strata-registry-client";
// The forwarding key every broker derives from the inter-broker password ("" = none).
std::string forward_key(const std::string& inter_broker_password);
// The header's value for `req` as received from its client ("" without a key).
std::string vouch_for_client(const std::string& key, const HttpRequest& req);
// The client host a forwarded request's header vouches for; nullopt when absent or not valid.
std::optional<std::string> vouched_client_host(const std::string& key, const HttpRequest& req);

}  // namespace strata::broker::schema
