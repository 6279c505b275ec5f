// strata-bench consume: reads N messages from the beginning of every partition of a topic with
// assign() (no group membership, no commits), batch-polling the consumer queue.
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/bench/bench_common.h"

namespace strata::tools::bench {
Result<RunResult> run_consume(const Options& o) {
  auto conf_r = base_conf(o, false);
  if (!conf_r.ok()) return conf_r.status();
  rd_kafka_conf_t* conf = *conf_r;
  // assign() needs a group handle in librdkafka, but nothing here joins, fetches or commits.
  Status st = conf_set(conf, "group.id", "strata-bench");
  if (st.ok()) st = conf_set(conf, "enable.auto.commit", "false");
  if (st.ok()) st = conf_set(conf, "enable.auto.offset.store", "false");
  if (st.ok()) st = conf_set(conf, "auto.offset.reset", "earliest");
  if (st.ok()) st = apply_extras(conf, o);
  if (!st.ok()) {
    rd_kafka_conf_destroy(conf);
    return st;
  }
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return Status(Errc::invalid_argument, std::string("rd_kafka_new: ") + err);
  }
  int32_t parts = o.partitions;
  if (parts <= 0) {
    auto n = partition_count(rk, o.topic);
    if (!n.ok()) {
      rd_kafka_destroy(rk);
      return n.status();
    }
    parts = *n;
  }
  // Offset 0 rather than OFFSET_BEGINNING: the bench topics are fresh, and this keeps one
  // ListOffsets round trip per partition out of the measurement (auto.offset.reset covers a log
  // that does not start at 0).
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(parts);
  for (int32_t p = 0; p < parts; ++p) {
    rd_kafka_topic_partition_list_add(list, o.topic.c_str(), p)->offset = 0;
  }
  rd_kafka_queue_t* queue = rd_kafka_queue_get_consumer(rk);
  std::vector<rd_kafka_message_t*> batch(4096);

  RunResult r;
  r.mode = "consume";
  Status result;
  auto t0 = Clock::now();
  rd_kafka_resp_err_t aerr = rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (aerr) result = Status(Errc::io_error, std::string("assign: ") + rd_kafka_err2str(aerr));
  auto last_progress = Clock::now();
  int64_t errors = 0;
  while (result.ok() && r.msgs < o.num_messages) {
    ssize_t n = rd_kafka_consume_batch_queue(queue, 200, batch.data(), batch.size());
    if (n < 0) {
      result = Status(Errc::io_error,
                      std::string("consume: ") + rd_kafka_err2str(rd_kafka_last_error()));
      break;
    }
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = batch[static_cast<size_t>(i)];
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++r.msgs;
        r.bytes += static_cast<int64_t>(m->len);
      } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && errors++ < 5) {
        std::fprintf(stderr, "strata-bench: consume error: %s\n", rd_kafka_message_errstr(m));
      }
      rd_kafka_message_destroy(m);
    }
    if (n > 0) {
      last_progress = Clock::now();
    } else if (seconds_since(last_progress) * 1000 > o.timeout_ms) {
      result = Status(Errc::io_error, "no progress for " + std::to_string(o.timeout_ms) +
                                          " ms after " + std::to_string(r.msgs) + " messages");
    }
  }
  r.seconds = seconds_since(t0);
  rd_kafka_queue_destroy(queue);
  rd_kafka_destroy(rk);
  if (!result.ok()) return result;
  return r;
}

}  // namespace strata::tools::bench
