// The partition resolution shared by the extension handlers (ext_common.h).
#include "broker/handlers/ext_common.h"

#include "broker/broker.h"
#include "broker/pk_tables.h"

namespace strata::broker::handlers {

PkPartition resolve_pk_partition(RequestContext& ctx, const TopicEntry* topic,
                                 const std::string& name, int32_t partition) {
  using protocol::ErrorCode;
  PkPartition out;
  if (topic == nullptr || !topic->partition(partition)) {
    out.error = ErrorCode::unknown_topic_or_partition;
    return out;
  }
  auto state = ctx.broker.pk_tables().get(*topic, partition);
  if (!state.ok()) {
    out.error = ErrorCode::kafka_storage_error;
    out.message = state.status().message();
  } else if (!*state) {
    out.error = ErrorCode::invalid_request;
    out.message = "topic " + name + " is not a primary-key table";
  } else {
    out.state = std::move(*state);
  }
  return out;
}

}  // namespace strata::broker::handlers
