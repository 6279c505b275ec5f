// strata-bench produce: N messages of S bytes, null keys, partitions filled round robin
// (--rotate-bytes each), acks per option.
// The payload buffer is allocated once and reused; librdkafka copies it (RD_KAFKA_MSG_F_COPY).
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tools/bench/bench_common.h"

namespace strata::tools::bench {
namespace {

struct DeliveryStats {
  int64_t delivered = 0;
  int64_t failed = 0;
  rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* stats = static_cast<DeliveryStats*>(opaque);
  if (m->err) {
    if (stats->failed++ == 0) stats->first_error = m->err;
  } else {
    ++stats->delivered;
  }
}

}  // namespace

Result<RunResult> run_produce(const Options& o) {
  auto conf_r = base_conf(o, false);
  if (!conf_r.ok()) return conf_r.status();
  rd_kafka_conf_t* conf = *conf_r;
  DeliveryStats stats;
  Status st = conf_set(conf, "acks", o.acks);
  if (st.ok()) st = conf_set(conf, "linger.ms", std::to_string(o.linger_ms));
  if (st.ok()) st = conf_set(conf, "batch.size", std::to_string(o.batch_bytes));
  if (st.ok()) st = conf_set(conf, "batch.num.messages", std::to_string(o.batch_messages));
  if (st.ok()) st = conf_set(conf, "compression.codec", o.compression);
  if (st.ok()) st = conf_set(conf, "queue.buffering.max.messages", "1000000");
  if (st.ok()) st = conf_set(conf, "queue.buffering.max.kbytes", "1048576");
  if (st.ok()) st = conf_set(conf, "message.timeout.ms", std::to_string(o.timeout_ms));
  if (st.ok()) st = apply_extras(conf, o);
  if (!st.ok()) {
    rd_kafka_conf_destroy(conf);
    return st;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_opaque(conf, &stats);

  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return Status(Errc::invalid_argument, std::string("rd_kafka_new: ") + err);
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);

  // Metadata first (partition count; keeps the first round trip out of the measurement).
  int32_t parts = o.partitions;
  if (parts <= 0) {
    auto n = partition_count(rk, o.topic);
    if (!n.ok()) {
      rd_kafka_topic_destroy(rkt);
      rd_kafka_destroy(rk);
      return n.status();
    }
    parts = *n;
  }
  // Messages per partition before rotating; 0 = RD_KAFKA_PARTITION_UA (librdkafka decides).
  // 16 bytes approximates a v2 record's framing for a small keyless record.
  const int64_t per_partition =
      o.rotate_bytes > 0 ? std::max<int64_t>(1, o.rotate_bytes / (o.message_bytes + 16)) : 0;

  std::vector<char> payload(static_cast<size_t>(o.message_bytes));
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i % 26);

  Status result;
  auto t0 = Clock::now();
  int32_t partition = per_partition > 0 ? 0 : RD_KAFKA_PARTITION_UA;
  int64_t in_partition = 0;
  for (int64_t i = 0; i < o.num_messages;) {
    if (per_partition > 0 && in_partition == per_partition) {
      partition = partition + 1 == parts ? 0 : partition + 1;
      in_partition = 0;
    }
    if (rd_kafka_produce(rkt, partition, RD_KAFKA_MSG_F_COPY, payload.data(),
                         payload.size(), nullptr, 0, nullptr) == 0) {
      ++i;
      ++in_partition;
      if ((i & 1023) == 0) rd_kafka_poll(rk, 0);
      continue;
    }
    rd_kafka_resp_err_t e = rd_kafka_last_error();
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      result = Status(Errc::io_error, std::string("produce: ") + rd_kafka_err2str(e));
      break;
    }
    rd_kafka_poll(rk, 10);  // queue full: serve delivery reports, then retry the same message
  }
  if (result.ok()) {
    rd_kafka_resp_err_t fe = rd_kafka_flush(rk, o.timeout_ms);
    if (fe != RD_KAFKA_RESP_ERR_NO_ERROR) {
      result = Status(Errc::io_error, std::string("flush: ") + rd_kafka_err2str(fe));
    }
  }
  RunResult r;
  r.mode = "produce";
  r.seconds = seconds_since(t0);
  r.msgs = stats.delivered;
  r.bytes = stats.delivered * o.message_bytes;
  if (result.ok() && stats.failed > 0) {
    result = Status(Errc::io_error, std::to_string(stats.failed) + " messages failed, first: " +
                                        rd_kafka_err2str(stats.first_error));
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  if (!result.ok()) return result;
  return r;
}

}  // namespace strata::tools::bench
