// strata-perf consume: reads N records from offset 0 of every partition (assign(), no group
// membership or commits), batch-polling librdkafka's consumer queue.
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <vector>

#include "tools/perf/kafka_util.h"
#include "tools/perf/options.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {

Status run_consume(const ConsumeOptions& o) {
  auto rk_r = make_handle(RD_KAFKA_CONSUMER, o.k.bootstrap,
                          {{"group.id", "strata-perf"},  // assign() needs a group handle
                           {"enable.auto.commit", "false"},
                           {"enable.auto.offset.store", "false"},
                           {"auto.offset.reset", "earliest"}},
                          o.k.props);
  if (!rk_r.ok()) return rk_r.status();
  rd_kafka_t* rk = *rk_r;
  rd_kafka_queue_t* queue = rd_kafka_queue_get_consumer(rk);
  Counters c;
  Status result;
  std::vector<rd_kafka_message_t*> batch(4096);
  auto t0 = Clock::now();
  auto parts = assign_all(rk, o.k.topic);
  if (!parts.ok()) result = parts.status();
  Progress progress("consume", c, "records", "bytes");
  auto last_progress = Clock::now();
  int64_t n = 0, bytes = 0;
  while (result.ok() && n < o.num_records) {
    ssize_t got = rd_kafka_consume_batch_queue(queue, 100, batch.data(), batch.size());
    if (got < 0) {
      result = Status(Errc::io_error,
                      std::string("consume: ") + rd_kafka_err2str(rd_kafka_last_error()));
      break;
    }
    for (ssize_t i = 0; i < got; ++i) {
      rd_kafka_message_t* m = batch[static_cast<size_t>(i)];
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (n < o.num_records) {
          ++n;
          bytes += static_cast<int64_t>(m->len);
        }
      } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (c.errors.fetch_add(1) < 5) {
          std::fprintf(stderr, "strata-perf: consume error: %s\n", rd_kafka_message_errstr(m));
        }
      }
      rd_kafka_message_destroy(m);
    }
    c.ops.store(n, std::memory_order_relaxed);
    c.items.store(bytes, std::memory_order_relaxed);
    if (got > 0) {
      last_progress = Clock::now();
    } else if (seconds_since(last_progress) * 1000 > o.timeout_ms) {
      result = Status(Errc::io_error, "no record for " + std::to_string(o.timeout_ms) +
                                          " ms after " + std::to_string(n) + " records");
    }
  }
  const double secs = seconds_since(t0);
  progress.stop();
  rd_kafka_queue_destroy(queue);
  rd_kafka_destroy(rk);
  if (!result.ok()) return result;
  print_summary({{"mode", "consume"},
                 {"topic", o.k.topic},
                 {"records", n},
                 {"bytes", bytes},
                 {"seconds", secs},
                 {"records_per_s", static_cast<double>(n) / secs},
                 {"mb_per_s", static_cast<double>(bytes) / secs / (1024.0 * 1024.0)}});
  return Status::Ok();
}

}  // namespace strata::tools::perf
