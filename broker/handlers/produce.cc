// Produce (0), v3-11 served; v0-2 (message formats v0/v1) close the connection as Kafka 4.x does,
// but the advertised minimum stays 0 because librdkafka turns compression off otherwise.
// Per partition: validate and prepare the batch (broker/topics/batch_validation.h), append (the log
// itself wakes long-polling fetchers. Idempotent batches are deduplicated inside
// PartitionLog::append (same lock as the append): a retried duplicate is answered with its original
// offsets; out-of-order sequences and stale epochs get Kafka's codes. acks=0 gets no response; an
// error under acks=0 closes the connection (the only signal such a producer gets, as with a Java
// broker).
// Cluster mode: only the partition's leader appends (else NOT_LEADER_OR_FOLLOWER); acks=all
// needs an ISR of at least min.insync.replicas before the append (NOT_ENOUGH_REPLICAS) and is
// answered once the high watermark passed the batch (PendingAcks below). One node: acks=all with
// min.insync.replicas above 1 is NOT_ENOUGH_REPLICAS, as for a Java broker whose ISR is itself.
#include "protocol/messages/produce.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <functional>
#include <optional>

#include "broker/cluster/cluster_node.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/long_poll.h"
#include "broker/handlers/txn_common.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/pk/pk_tables.h"
#include "broker/quota/client_quotas.h"
#include "broker/security/authorize.h"
#include "broker/services.h"
#include "broker/topics/batch_validation.h"
#include "broker/topics/topic_registry.h"
#include "broker/txn/txn_coordinator.h"
#include "pkindex/column_stats.h"
#include "protocol/record/record_batch.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace {
using protocol::ErrorCode;
constexpr int16_t kMinServedVersion = 3;

struct PartitionAppend {
  Status status;
  std::vector<pkindex::RecordError> record_errors;  // PK tables: per-record rejections
  storage::PartitionLog::AppendInfo info;
};

// Kafka's code for the outcome of an append: the one place Produce maps what storage and pkindex
// report (a failed Status, or the idempotent-producer verdict of ProducerAppendInfo). Codes for a
// batch rejected before the append come from prepare_batch (broker/topics/batch_validation.h).
ErrorCode append_error(const PartitionAppend& a) {
  if (!a.status.ok()) {
    switch (a.status.code()) {
      case Errc::invalid_argument:
        return ErrorCode::invalid_record;  // PK record errors
      case Errc::corruption:
        return ErrorCode::corrupt_message;
      case Errc::too_large:
        return ErrorCode::message_too_large;
      case Errc::not_found:
        return ErrorCode::unknown_topic_or_partition;  // deleted meanwhile
      case Errc::shutting_down:
        // The partition's state closed under this request (its topic is being deleted, or the
        // broker is stopping): the client refreshes metadata and retries, as after a leader move.
        return ErrorCode::not_leader_or_follower;
      case Errc::busy:
        // A primary-key table's key written by another producer's open transaction: nothing was
        // appended, and the change this batch makes depends on that transaction's outcome.
        // Kafka has no Produce error for "wait for that marker"; NOT_ENOUGH_REPLICAS is one every
        // client retries with backoff (librdkafka, the Java client, KafkaJS, kafka-python with
        // retries > 0) and that says "not persisted" (docs/transactions.md).
        return ErrorCode::not_enough_replicas;
      case Errc::no_space:  // disk or quota full: the log stays writable, retry once space is back
      case Errc::unavailable:  // out of descriptors or memory even after storage's retries
        return ErrorCode::kafka_storage_error;  // retriable for clients, as for Kafka
      default:
        return ErrorCode::kafka_storage_error;
    }
  }
  switch (a.info.producer_check) {
    case storage::ProducerCheck::out_of_order:
      return ErrorCode::out_of_order_sequence_number;
    case storage::ProducerCheck::stale_epoch:
      return ErrorCode::invalid_producer_epoch;
    case storage::ProducerCheck::fenced_coordinator:  // markers only
      return ErrorCode::transaction_coordinator_fenced;
    case storage::ProducerCheck::ok:
    case storage::ProducerCheck::duplicate:
      break;
  }
  return ErrorCode::none;
}

// A storage failure repeats for every append while it lasts (a full disk fails them all), so it is
// logged at most once a second per class (no space, transient, persistent). Returns 0 to skip this
// one, else the failures of its class since the last line, this one included.
uint64_t storage_error_log_due(const Status& st, int64_t now) {
  static std::atomic<int64_t> last_ms[3] = {INT64_MIN / 2, INT64_MIN / 2, INT64_MIN / 2};
  static std::atomic<uint64_t> failures[3] = {0, 0, 0};
  const size_t c = st.code() == Errc::no_space ? 0 : st.code() == Errc::unavailable ? 1 : 2;
  failures[c].fetch_add(1, std::memory_order_relaxed);
  int64_t last = last_ms[c].load(std::memory_order_relaxed);
  if (now - last < 1000 || !last_ms[c].compare_exchange_strong(last, now)) return 0;
  return std::max<uint64_t>(1, failures[c].exchange(0, std::memory_order_relaxed));
}

// A log topic appends the prepared batch; a primary-key table writes it through its state, which
// owns the compute -> append -> apply sequence (pkindex/pk_state.h) and appends the changelog
// batch it computed instead.
PartitionAppend append_partition(Services& svc, const TopicEntry& topic, int32_t partition,
                                 storage::PartitionLog& log, std::span<uint8_t> batch,
                                 int64_t now) {
  PartitionAppend out;
  if (!topic.pk_table) {
    // A typed log topic takes JSON objects (json) or values its writers' schemas decode
    // (confluent), and nulls.
    if (topic.json_log || topic.writers) {
      thread_local protocol::RecordReader reader;
      const protocol::RecordBatchView view(batch);
      auto bad = topic.writers
                     ? pkindex::stats::invalid_confluent_values(reader, view, *topic.writers)
                     : pkindex::stats::invalid_json_values(reader, view);
      if (!bad.ok()) {
        out.status = bad.status();
        return out;
      }
      if (!bad->empty()) {
        for (auto& [index, why] : *bad) out.record_errors.push_back({index, std::move(why)});
        out.status = Status(Errc::invalid_argument, out.record_errors.front().message);
        return out;
      }
    }
    auto appended = log.append(batch, now);
    if (appended.ok()) {
      out.info = std::move(*appended);
    } else {
      out.status = appended.status();
    }
    return out;
  }
  auto state = svc.pk_tables.get(topic, partition);
  if (!state.ok()) {
    out.status = state.status();
    return out;
  }
  protocol::RecordBatchView input(batch);
  pkindex::WriteInput in{input, input.compression(),
                         pkindex::changelog_batch_limit(topic.config.max_message_bytes)};
  in.max_record_bytes = topic.config.max_message_bytes;  // decompressed rows: see WriteInput
  // Cluster mode: rows are applied once committed (the high watermark passed them), never before.
  in.hold = svc.cluster != nullptr;
  pkindex::WriteResult w = (*state)->write(
      in, now, [&](std::span<uint8_t> changelog) { return log.append(changelog, now); });
  if (in.hold && w.status.ok()) {
    // The high watermark may have moved inside the append (replication factor 1), where the
    // state could not apply: apply now.
    if (Status st = (*state)->apply_committed(log.high_watermark()); !st.ok()) {
      spdlog::error("applying {}-{} after a write: {}", topic.name, partition, st.to_string());
    }
  }
  out.status = std::move(w.status);
  out.record_errors = std::move(w.record_errors);
  out.info = std::move(w.appended);
  if (out.status.ok() && out.info.producer_check == storage::ProducerCheck::ok) {
    topic.counters->pk_rows_applied.fetch_add(static_cast<uint64_t>(w.records),
                                              std::memory_order_relaxed);
  }
  return out;
}

// test.fault.drop.produce.response.every.n (test-only, needs --enable-test-faults): every Nth
// produce request (acks != 0) is appended normally, then the connection is closed instead of
// answering, so clients must retry and the idempotent-producer dedupe is exercised.
bool drop_this_response(int64_t every_n) {
  static std::atomic<uint64_t> produce_count{0};
  if (every_n <= 0) return false;
  return (produce_count.fetch_add(1, std::memory_order_relaxed) + 1) %
             static_cast<uint64_t>(every_n) ==
         0;
}

void send_response(RequestContext& ctx, protocol::ProduceResponse& resp) {
  if (drop_this_response(ctx.svc.config.test_fault_drop_produce_response_every_n)) {
    spdlog::info("test fault: dropping the produce response to {}", ctx.responder.peer());
    ctx.responder.close("test.fault.drop.produce.response.every.n");
    return;
  }
  ctx.respond(resp);
}

// A partition appended under acks=all in cluster mode, answered once the high watermark passed it.
struct AwaitedAck {
  size_t topic_index = 0;
  size_t partition_index = 0;
  std::shared_ptr<const TopicEntry> topic;  // keeps the log alive
  storage::PartitionLog* log = nullptr;
  int64_t required_hw = 0;    // last offset + 1
  int32_t leader_epoch = -1;  // this broker's term when it appended
  int32_t min_isr = 1;
  bool done = false;
};

// acks=all in cluster mode: the response waits until every appended partition's high watermark
// reached its batch (the ISR has it), as Kafka's delayed produce does, or until timeout_ms
// (REQUEST_TIMED_OUT). A partition whose leadership moved meanwhile answers
// NOT_LEADER_OR_FOLLOWER; one whose ISR shrank below min.insync.replicas by then answers
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (the data is in the log, but not as durably as asked).
// Success needs this broker to still lead in the term of the append: an old leader that became a
// follower may have truncated the batch and fetched other records to the same offsets, and its
// high watermark (now the new leader's) passing them says nothing about the batch.
class PendingAcks : public LongPoll<PendingAcks> {
 public:
  PendingAcks(RequestContext ctx, protocol::ProduceResponse resp, std::vector<AwaitedAck> acks,
              int32_t timeout_ms)
      : LongPoll(ctx.svc, ctx.responder.executor(), timeout_ms),
        ctx_(std::move(ctx)),
        resp_(std::move(resp)),
        acks_(std::move(acks)) {}

  bool attempt(bool out_of_time, WaitOn& wait) {
    auto& cluster = *ctx_.svc.cluster;
    for (auto& a : acks_) {
      if (a.done) continue;
      auto& tout = resp_.responses[a.topic_index];
      auto& pout = tout.partition_responses[a.partition_index];
      auto fail = [&](ErrorCode e) {
        pout.error_code = e;
        pout.base_offset = -1;
        ctx_.svc.metrics.request_error(ctx_.api_key, e);
        a.done = true;
      };
      const int64_t hw = a.log->high_watermark();
      const bool same_term =
          a.leader_epoch >= 0 &&
          cluster.leader_check(tout.name, pout.index, a.leader_epoch) == ErrorCode::none &&
          a.log->latest_epoch() == a.leader_epoch;
      if (!same_term) {
        fail(ErrorCode::not_leader_or_follower);
      } else if (hw >= a.required_hw) {
        a.done = true;
        if (static_cast<int32_t>(cluster.isr(tout.name, pout.index).size()) < a.min_isr) {
          fail(ErrorCode::not_enough_replicas_after_append);
        }
      } else if (out_of_time) {
        fail(ErrorCode::request_timed_out);
      } else {
        wait.add(a.log, hw);
      }
    }
    if (!wait.logs.empty()) return false;
    send_response(ctx_, resp_);
    return true;
  }

 private:
  RequestContext ctx_;
  protocol::ProduceResponse resp_;
  std::vector<AwaitedAck> acks_;
};

// A transactional batch is appended only by the producer of its transactional id whose ongoing
// transaction holds the partition (AddPartitionsToTxn), while the coordinator holds that
// transaction (no marker can slip in between); the partition registers the open transaction.
// In a cluster the coordinator is usually another broker: the leader checks what Kafka's leaders
// check before KIP-890 — the producer's epoch and sequence (the log's producer state) — and a
// batch that a client sends without AddPartitionsToTxn, or that arrives after its marker, opens a
// transaction the coordinator does not know: it is aborted by the producer's next epoch or by an
// operator (`strata txn abort`), as in Kafka 3.x (on a primary-key table its keys stay held
// until then).
std::pair<ErrorCode, std::string> append_transactional(RequestContext& ctx,
                                                       const std::optional<std::string>& txn_id,
                                                       const TopicEntry& topic, int32_t partition,
                                                       std::span<uint8_t> batch,
                                                       const std::function<void()>& append) {
  if (!txn_id || txn_id->empty()) {
    return {ErrorCode::invalid_record,
            "a transactional batch needs the request's transactional id"};
  }
  if (ctx.svc.cluster) {
    append();
    return {ErrorCode::none, ""};
  }
  if (!ctx.svc.txns) {
    return {ErrorCode::invalid_txn_state, "this broker has no transaction coordinator"};
  }
  protocol::RecordBatchView view(batch);
  const txn::TxnError e = ctx.svc.txns->append_in_txn(
      *txn_id, view.producer_id(), view.producer_epoch(), {topic.name, partition}, append);
  if (e == txn::TxnError::none) return {ErrorCode::none, ""};
  return {txn_error_code(e, ctx.version, -1),
          e == txn::TxnError::invalid_txn_state
              ? "the partition is not in the producer's ongoing transaction"
              : "not the transactional id's current producer"};
}

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
  cluster::ClusterNode* cluster = ctx.svc.cluster;
  std::vector<AwaitedAck> awaited;  // acks=all in cluster mode
  // Kafka: a transactional producer needs WRITE on its transactional id (else every partition
  // is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
  const bool txn_allowed =
      !req.transactional_id || !acks_valid ||
      authorize(ctx, AclOperation::write, ResourceType::transactional_id, *req.transactional_id);
  for (const auto& td : req.topic_data) {
    auto& tout = resp.responses.emplace_back();
    tout.name = td.name;
    // Kafka: WRITE on the topic, checked before its existence (no name probing).
    const bool writable =
        !acks_valid || (txn_allowed && authorize_topic(ctx, AclOperation::write, td.name));
    auto topic = acks_valid && writable ? ctx.svc.topics.find(td.name) : nullptr;
    metrics::TopicCounters* counters = topic ? topic->counters.get() : nullptr;
    for (const auto& pd : td.partition_data) {
      auto& pout = tout.partition_responses.emplace_back();
      pout.index = pd.index;
      pout.base_offset = -1;
      pout.log_append_time_ms = -1;
      pout.log_start_offset = -1;
      auto fail = [&](ErrorCode e, std::string msg) {
        pout.error_code = e;
        if (!msg.empty()) pout.error_message = std::move(msg);
        any_error = true;
        ctx.svc.metrics.request_error(ctx.api_key, pout.error_code);
      };
      if (!acks_valid) {
        fail(ErrorCode::invalid_required_acks, "");
        continue;
      }
      if (!writable) {
        fail(txn_allowed ? ErrorCode::topic_authorization_failed
                         : ErrorCode::transactional_id_authorization_failed,
             "");
        continue;
      }
      storage::PartitionLog* log = topic ? topic->partition(pd.index) : nullptr;
      if (log && is_internal_topic(td.name)) {  // only the group coordinator writes it
        fail(ErrorCode::invalid_topic_exception, "Cannot append to internal topic " + td.name);
        continue;
      }
      if (!log) {
        fail(ErrorCode::unknown_topic_or_partition, "");
        continue;
      }
      const int32_t min_isr = topic->config.min_insync_replicas;
      if (cluster) {
        ErrorCode lead = cluster->leader_check(td.name, pd.index, -1);
        if (lead == ErrorCode::none && req.acks == -1) {
          lead = cluster->min_isr_check(td.name, pd.index, min_isr);
        }
        if (lead != ErrorCode::none) {
          fail(lead, "");
          continue;
        }
      } else if (req.acks == -1 && min_isr > 1) {  // one node: the ISR is this broker alone
        fail(ErrorCode::not_enough_replicas, "");
        continue;
      }
      // The decoded records view points into our own request frame, which we may rewrite.
      std::span<uint8_t> bytes;
      if (!pd.records.is_null && !pd.records.parts.empty() && pd.records.size() != 0) {
        const auto& part = pd.records.parts.front();
        bytes = std::span<uint8_t>(const_cast<uint8_t*>(part.data), part.length);
      }
      PreparedBatch prepared = prepare_batch(bytes, topic->config, ctx.version, now);
      if (prepared.error != ErrorCode::none) {
        spdlog::debug("produce to {}-{} from {} rejected: {} ({})", td.name, pd.index,
                      ctx.responder.peer(), protocol::error_name(prepared.error), prepared.message);
        fail(prepared.error, prepared.message);
        continue;
      }
      // The term the batch is appended in (a leader's log carries its epoch from become_leader).
      const int32_t leader_epoch = cluster ? log->latest_epoch() : -1;
      PartitionAppend appended;
      auto append = [&] {
        appended = append_partition(ctx.svc, *topic, pd.index, *log, prepared.batch, now);
      };
      if (protocol::RecordBatchView(prepared.batch).is_transactional()) {
        auto [code, why] = append_transactional(ctx, req.transactional_id, *topic, pd.index,
                                                prepared.batch, append);
        if (code != ErrorCode::none) {
          spdlog::debug("transactional produce to {}-{} from {} refused: {}", td.name, pd.index,
                        ctx.responder.peer(), why);
          fail(code, why);
          continue;
        }
      } else {
        append();
      }
      const ErrorCode append_code = append_error(appended);
      if (!appended.status.ok()) {
        if (append_code == ErrorCode::kafka_storage_error) {
          if (uint64_t n = storage_error_log_due(appended.status, now)) {
            spdlog::error(
                "append to {}-{} failed: {} ({} failed append(s) of this kind since the "
                "last such line)",
                td.name, pd.index, appended.status.to_string(), n);
          }
        }
        for (const auto& re : appended.record_errors) {
          auto& out = pout.record_errors.emplace_back();
          out.batch_index = re.index;
          out.batch_index_error_message = re.message;
        }
        fail(append_code, appended.status.message());
        continue;
      }
      if (append_code != ErrorCode::none) {  // the idempotent-producer verdict
        spdlog::debug("produce to {}-{} from {} rejected: {}", td.name, pd.index,
                      ctx.responder.peer(), appended.info.producer_message);
        fail(append_code, appended.info.producer_message);
        continue;
      }
      const bool duplicate = appended.info.producer_check == storage::ProducerCheck::duplicate;
      if (duplicate) {
        spdlog::debug("produce to {}-{} from {}: duplicate of offsets {}-{}, not appended", td.name,
                      pd.index, ctx.responder.peer(), appended.info.base_offset,
                      appended.info.last_offset);
      }
      pout.error_code = ErrorCode::none;
      pout.base_offset = appended.info.base_offset;
      // A retried duplicate is answered with its original offsets; like Kafka, no append time.
      pout.log_append_time_ms = duplicate ? -1 : prepared.log_append_time;
      pout.log_start_offset = log->log_start_offset();
      if (cluster && req.acks == -1) {
        AwaitedAck a;
        a.topic_index = resp.responses.size() - 1;
        a.partition_index = tout.partition_responses.size() - 1;
        a.topic = topic;
        a.log = log;
        a.required_hw = appended.info.last_offset + 1;
        a.leader_epoch = leader_epoch;
        a.min_isr = min_isr;
        awaited.push_back(std::move(a));
      }
      if (!duplicate) {
        counters->bytes_in.fetch_add(prepared.batch.size(), std::memory_order_relaxed);
        counters->records_in.fetch_add(
            static_cast<uint64_t>(protocol::RecordBatchView(prepared.batch).record_count()),
            std::memory_order_relaxed);
      }
    }
  }
  // producer_byte_rate counts the request's bytes (KIP-13); respond() adds request_percentage.
  resp.throttle_time_ms = static_cast<int32_t>(
      std::min<int64_t>(ctx.svc.quotas.record_produce(
                            quota_client(ctx), static_cast<int64_t>(ctx.frame->bytes.size())),
                        INT32_MAX));
  if (req.acks == 0) {
    if (any_error) {
      ctx.responder.close("acks=0 produce failed");
    } else {  // no response to carry the throttle: the mute alone
      ctx.responder.no_response(
          std::max<int64_t>(resp.throttle_time_ms, request_quota_throttle(ctx)));
    }
    return;
  }
  if (!awaited.empty()) {
    auto pending =
        std::make_shared<PendingAcks>(ctx, std::move(resp), std::move(awaited), req.timeout_ms);
    pending->run(false);
    return;
  }
  send_response(ctx, resp);
}

}  // namespace strata::broker::handlers
