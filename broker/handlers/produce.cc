// Produce (0), v3-11 served; v0-2 (message formats v0/v1) close the connection as Kafka 4.x does,
// but the advertised minimum stays 0 because librdkafka turns compression off otherwise.
// Per partition: validate and prepare the batch (broker/batch_validation.h), append, wake
// long-polling fetchers. acks=0 gets no response; an error under acks=0 closes the connection
// (the only signal such a producer gets, as with a Java broker).
#include <spdlog/spdlog.h>

#include "broker/batch_validation.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/produce.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int16_t kMinServedVersion = 3;
}  // namespace

void produce(RequestContext& ctx, protocol::Reader& body) {
  if (ctx.version < kMinServedVersion) {
    ctx.responder.close("Produce v" + std::to_string(ctx.version) +
                        " (message format v0/v1) is not supported");
    return;
  }
  protocol::ProduceRequest req;
  req.decode(body, ctx.version);
  const bool acks_valid = req.acks == 0 || req.acks == 1 || req.acks == -1;
  const int64_t now = now_ms();

  protocol::ProduceResponse resp;
  bool any_error = false;
  for (const auto& td : req.topic_data) {
    auto& tout = resp.responses.emplace_back();
    tout.name = td.name;
    auto topic = acks_valid ? ctx.broker.topics().find(td.name) : nullptr;
    for (const auto& pd : td.partition_data) {
      auto& pout = tout.partition_responses.emplace_back();
      pout.index = pd.index;
      pout.base_offset = -1;
      pout.log_append_time_ms = -1;
      pout.log_start_offset = -1;
      auto fail = [&](ErrorCode e, std::string msg) {
        pout.error_code = static_cast<int16_t>(e);
        if (!msg.empty()) pout.error_message = std::move(msg);
        any_error = true;
      };
      if (!acks_valid) {
        fail(ErrorCode::invalid_required_acks, "");
        continue;
      }
      storage::PartitionLog* log = topic ? topic->partition(pd.index) : nullptr;
      if (!log) {
        fail(ErrorCode::unknown_topic_or_partition, "");
        continue;
      }
      if (pd.records.is_null || pd.records.parts.empty() || pd.records.size() == 0) {
        fail(ErrorCode::invalid_record, "empty record set");
        continue;
      }
      // The decoded records view points into our own request frame, which we may rewrite.
      const auto& part = pd.records.parts.front();
      std::span<uint8_t> bytes(const_cast<uint8_t*>(part.data), part.length);
      PreparedBatch prepared = prepare_batch(bytes, topic->config, ctx.version, now);
      if (prepared.error != ErrorCode::none) {
        spdlog::debug("produce to {}-{} from {} rejected: {} ({})", td.name, pd.index,
                      ctx.responder.peer(), protocol::error_name(prepared.error), prepared.message);
        fail(prepared.error, prepared.message);
        continue;
      }
      auto appended = log->append(prepared.batch, now);
      if (!appended.ok()) {
        spdlog::error("append to {}-{} failed: {}", td.name, pd.index,
                      appended.status().to_string());
        fail(ErrorCode::kafka_storage_error, appended.status().message());
        continue;
      }
      pout.error_code = 0;
      pout.base_offset = appended->base_offset;
      pout.log_append_time_ms = prepared.log_append_time;
      pout.log_start_offset = log->log_start_offset();
      ctx.broker.watchers().notify(log);
    }
  }
  if (req.acks == 0) {
    if (any_error) {
      ctx.responder.close("acks=0 produce failed");
    } else {
      ctx.responder.no_response();
    }
    return;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
