// One function per Kafka API; each lives in broker/handlers/<api>.cc. See broker/handler.h.
#pragma once

#include "broker/handler.h"

namespace strata::broker::handlers {

void api_versions(RequestContext& ctx, protocol::Reader& body);
void metadata(RequestContext& ctx, protocol::Reader& body);
void produce(RequestContext& ctx, protocol::Reader& body);
void fetch(RequestContext& ctx, protocol::Reader& body);
void list_offsets(RequestContext& ctx, protocol::Reader& body);
void create_topics(RequestContext& ctx, protocol::Reader& body);
void delete_topics(RequestContext& ctx, protocol::Reader& body);
void find_coordinator(RequestContext& ctx, protocol::Reader& body);
// Topic administration and dynamic configs.
void describe_configs(RequestContext& ctx, protocol::Reader& body);
void alter_configs(RequestContext& ctx, protocol::Reader& body);
void incremental_alter_configs(RequestContext& ctx, protocol::Reader& body);
void create_partitions(RequestContext& ctx, protocol::Reader& body);
void delete_records(RequestContext& ctx, protocol::Reader& body);
void describe_cluster(RequestContext& ctx, protocol::Reader& body);
void offset_for_leader_epoch(RequestContext& ctx, protocol::Reader& body);
// Partition reassignment and leader elections (cluster mode; single-node answers otherwise).
void elect_leaders(RequestContext& ctx, protocol::Reader& body);
void alter_partition_reassignments(RequestContext& ctx, protocol::Reader& body);
void list_partition_reassignments(RequestContext& ctx, protocol::Reader& body);
// client quotas
void describe_client_quotas(RequestContext& ctx, protocol::Reader& body);
void alter_client_quotas(RequestContext& ctx, protocol::Reader& body);
// SCRAM credentials (user_scram_credentials.cc)
void describe_user_scram_credentials(RequestContext& ctx, protocol::Reader& body);
void alter_user_scram_credentials(RequestContext& ctx, protocol::Reader& body);
// Consumer groups
void join_group(RequestContext& ctx, protocol::Reader& body);
void sync_group(RequestContext& ctx, protocol::Reader& body);
void heartbeat(RequestContext& ctx, protocol::Reader& body);
void leave_group(RequestContext& ctx, protocol::Reader& body);
void offset_commit(RequestContext& ctx, protocol::Reader& body);
void offset_fetch(RequestContext& ctx, protocol::Reader& body);
void describe_groups(RequestContext& ctx, protocol::Reader& body);
void list_groups(RequestContext& ctx, protocol::Reader& body);
void delete_groups(RequestContext& ctx, protocol::Reader& body);
void offset_delete(RequestContext& ctx, protocol::Reader& body);
// SASL (the connection's Session; handlers/sasl.cc). sasl_raw_token answers the bare tokens that
// follow a SaslHandshake v0.
void sasl_handshake(RequestContext& ctx, protocol::Reader& body);
void sasl_authenticate(RequestContext& ctx, protocol::Reader& body);
void sasl_raw_token(Services& svc, const RequestFrame& frame, const Responder& responder);
// ACL administration (broker/handlers/acls.cc)
void describe_acls(RequestContext& ctx, protocol::Reader& body);
void create_acls(RequestContext& ctx, protocol::Reader& body);
void delete_acls(RequestContext& ctx, protocol::Reader& body);
// Idempotent producer
void init_producer_id(RequestContext& ctx, protocol::Reader& body);
// Transactions (single node: broker/txn/txn_coordinator.h)
void add_partitions_to_txn(RequestContext& ctx, protocol::Reader& body);
void add_offsets_to_txn(RequestContext& ctx, protocol::Reader& body);
void end_txn(RequestContext& ctx, protocol::Reader& body);
void txn_offset_commit(RequestContext& ctx, protocol::Reader& body);
// Transaction administration: finding and ending stuck transactions (txn_admin.cc,
// describe_producers.cc, write_txn_markers.cc)
void list_transactions(RequestContext& ctx, protocol::Reader& body);
void describe_transactions(RequestContext& ctx, protocol::Reader& body);
void describe_producers(RequestContext& ctx, protocol::Reader& body);
void write_txn_markers(RequestContext& ctx, protocol::Reader& body);

// Extension APIs of primary-key tables (keys 16000-16099, Protobuf bodies).
void ext_lookup(RequestContext& ctx, protocol::Reader& body);
void ext_lookup_as_of(RequestContext& ctx, protocol::Reader& body);
void ext_prefix_lookup(RequestContext& ctx, protocol::Reader& body);
void ext_describe_table(RequestContext& ctx, protocol::Reader& body);
void ext_replica_checkpoint(RequestContext& ctx, protocol::Reader& body);
void ext_end_txn_offsets(RequestContext& ctx, protocol::Reader& body);
void ext_scan(RequestContext& ctx, protocol::Reader& body);
void ext_read_changelog(RequestContext& ctx, protocol::Reader& body);
void ext_read_log(RequestContext& ctx, protocol::Reader& body);

}  // namespace strata::broker::handlers
