// DescribeTable (extension key 16004, v0; protocol/ext/describe_table.proto): settings and
// per-partition state of primary-key tables. A log topic -> INVALID_REQUEST, unknown ->
// UNKNOWN_TOPIC_OR_PARTITION; an undecodable body -> top-level INVALID_REQUEST. In cluster mode a
// broker without a replica answers the table facts from the view, each partition
// NOT_LEADER_OR_FOLLOWER.
#include "broker/cluster/cluster_node.h"
#include "broker/handlers/ext_common.h"
#include "broker/handlers/handlers.h"
#include "broker/pk/pk_tables.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/topic_registry.h"
#include "protocol/ext/describe_table.pb.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
// The table-level facts of `topic`; false (and the table's error set) for a log topic.
template <typename Out>
bool describe_config(Out& t, const TopicEntry& topic, int32_t partitions,
                     const schema::SchemaSource* registry) {
  auto cfg = PkTables::table_config(topic);
  if (!cfg) {
    set_ext_error(t, ErrorCode::invalid_request);
    t.set_error_message("topic " + topic.name + " is not a primary-key table");
    return false;
  }
  t.set_table_type("primary-key");
  t.set_merge_engine(std::string(pkindex::merge_engine_name(cfg->merge_engine)));
  t.set_version_header(cfg->version_header);
  t.set_changelog_image(std::string(pkindex::image_name(cfg->image)));
  t.set_delete_behavior(std::string(pkindex::delete_behavior_name(cfg->delete_behavior)));
  t.set_ttl_ms(cfg->ttl_ms);
  t.set_partitioner(std::string(pkindex::partitioner_name(cfg->partitioner)));
  t.set_partition_count(partitions);
  t.set_value_format(std::string(pkindex::value_format_name(cfg->value_format)));
  for (const auto& [column, agg] : cfg->fields) {
    std::string fn(pkindex::agg_fn_name(agg.fn));
    if (agg.fn == pkindex::AggFn::listagg) fn += "(" + agg.delimiter + ")";
    (*t.mutable_column_aggregations())[column] = fn;
  }
  if (cfg->value_format == pkindex::ValueFormat::confluent) {
    t.set_value_schema_subject(cfg->value_schema_subject);
    t.set_value_schema_id(cfg->value_schema_id);
    if (auto s = schema::describe_table_schema(registry, *cfg); s.ok()) {
      t.set_value_schema_type(s->type);
      for (auto& c : s->columns) t.add_columns(std::move(c));
    }
  }
  return true;
}
}  // namespace

void ext_describe_table(RequestContext& ctx, protocol::Reader& body) {
  strata::ext::DescribeTableRequest req;
  strata::ext::DescribeTableResponse resp;
  if (!parse_ext_body(body, req)) {
    set_ext_error(resp, ErrorCode::invalid_request);
    resp.set_error_message("undecodable DescribeTableRequest");
    respond_ext(ctx, resp);
    return;
  }
  for (const auto& name : req.topics()) {
    auto* t = resp.add_tables();
    t->set_topic(name);
    if (!authorize_topic(ctx, AclOperation::describe, name)) {
      set_ext_error(*t, ErrorCode::topic_authorization_failed);
      continue;
    }
    const schema::SchemaSource* registry = ctx.svc.pk_tables.registry_handle()->source.load();
    auto topic = ctx.svc.topics.find(name);
    if (!topic && ctx.svc.cluster) {
      // No replica here: the table's facts come from the cluster view (its record's configs);
      // its partitions are another broker's to describe.
      auto s = ctx.svc.cluster->snapshot();
      auto rec = s->topics.find(name);
      if (rec != s->topics.end()) {
        TopicEntry remote;
        remote.name = name;
        remote.configs = rec->second.configs;
        remote.parse_table();
        describe_config(*t, remote, static_cast<int32_t>(rec->second.replicas.size()), registry);
        for (int32_t i = 0; t->error_code() == 0 && i < t->partition_count(); ++i) {
          auto* p = t->add_partitions();
          p->set_partition(i);
          p->set_checkpoint_offset(-1);
          set_ext_error(*p, ErrorCode::not_leader_or_follower);
        }
        continue;
      }
    }
    if (!topic) {
      set_ext_error(*t, ErrorCode::unknown_topic_or_partition);
      continue;
    }
    if (!describe_config(*t, *topic, static_cast<int32_t>(topic->partitions.size()), registry)) {
      continue;
    }
    for (int32_t i = 0; i < static_cast<int32_t>(topic->partitions.size()); ++i) {
      auto* p = t->add_partitions();
      p->set_partition(i);
      p->set_checkpoint_offset(-1);
      auto state = ctx.svc.pk_tables.get(*topic, i);
      if (!state.ok() || !*state) {
        set_ext_error(*p, ErrorCode::kafka_storage_error);
        continue;
      }
      const storage::PartitionLog* log = topic->partition(i);
      p->set_applied_offset((*state)->applied_offset());
      p->set_checkpoint_offset((*state)->newest_checkpoint().offset);
      p->set_row_count_estimate(static_cast<int64_t>((*state)->estimate_rows()));
      p->set_changelog_gap_below(log->log_start_offset());
      p->set_high_watermark(log->high_watermark());
    }
  }
  respond_ext(ctx, resp);
}

}  // namespace strata::broker::handlers
