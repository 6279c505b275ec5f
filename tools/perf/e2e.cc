// strata-perf e2e: end-to-end latency at a fixed produce rate. Each payload carries a run nonce,
// a sequence number and the send time (steady clock, same process); a consumer thread reading all
// partitions records now - send time for every record of this run it sees first.
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "tools/perf/kafka_util.h"
#include "tools/perf/options.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {
namespace {

constexpr size_t kHeader = 24;  // nonce, sequence, send ns (host byte order: same process)

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

struct ConsumerSide {
  uint64_t nonce = 0;
  int64_t want = 0;
  int timeout_ms = 0;
  Counters counters;
  Histogram latency;
  std::vector<uint8_t> seen;  // per sequence number: duplicates are not counted twice
  int64_t duplicates = 0;
  std::atomic<bool> ready{false};  // every partition reached its end once
  std::atomic<bool> done{false};
  Status status;
};

void consume_loop(rd_kafka_t* rk, int32_t parts, ConsumerSide& s) {
  rd_kafka_queue_t* queue = rd_kafka_queue_get_consumer(rk);
  std::vector<rd_kafka_message_t*> batch(1);
  std::vector<uint8_t> eof(static_cast<size_t>(parts));
  int32_t eofs = 0;
  int64_t got_total = 0;
  auto last = Clock::now();
  while (got_total < s.want && !s.done.load()) {
    // One message at a time: consume_batch_queue would wait for a full batch or its timeout.
    rd_kafka_message_t* one = rd_kafka_consume_queue(queue, 100);
    const int64_t t = now_ns();
    const ssize_t n = one ? 1 : 0;
    batch[0] = one;
    for (ssize_t i = 0; i < n; ++i) {
      rd_kafka_message_t* m = batch[static_cast<size_t>(i)];
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        if (m->partition >= 0 && m->partition < parts && !eof[m->partition]) {
          eof[m->partition] = 1;
          if (++eofs == parts) s.ready.store(true);
        }
      } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->len >= kHeader) {
        uint64_t nonce;
        int64_t seq, sent;
        std::memcpy(&nonce, m->payload, 8);
        std::memcpy(&seq, static_cast<const char*>(m->payload) + 8, 8);
        std::memcpy(&sent, static_cast<const char*>(m->payload) + 16, 8);
        if (nonce == s.nonce && seq >= 0 && seq < s.want) {
          if (s.seen[static_cast<size_t>(seq)]) {
            ++s.duplicates;
          } else {
            s.seen[static_cast<size_t>(seq)] = 1;
            s.latency.record(static_cast<uint64_t>(std::max<int64_t>(0, t - sent)));
            ++got_total;
            s.counters.ops.fetch_add(1, std::memory_order_relaxed);
            s.counters.items.fetch_add(static_cast<int64_t>(m->len), std::memory_order_relaxed);
          }
        }
      } else if (m->err) {
        s.counters.errors.fetch_add(1, std::memory_order_relaxed);
      }
      rd_kafka_message_destroy(m);
    }
    if (n > 0) {
      last = Clock::now();
    } else if (seconds_since(last) * 1000 > s.timeout_ms) {
      s.status = Status(Errc::io_error, "e2e: no record for " + std::to_string(s.timeout_ms) +
                                            " ms after " + std::to_string(got_total));
      break;
    }
  }
  s.ready.store(true);
  rd_kafka_queue_destroy(queue);
}

}  // namespace

Status run_e2e(const E2eOptions& o) {
  if (o.record_size < static_cast<int64_t>(kHeader)) {
    return Status(Errc::invalid_argument, "--record-size must be >= 24 for e2e");
  }
  if (o.throughput <= 0) return Status(Errc::invalid_argument, "--throughput must be > 0 for e2e");
  ConsumerSide cs;
  cs.nonce = std::random_device{}() * 0x100000001ull + static_cast<uint64_t>(now_ns());
  cs.want = o.num_records;
  cs.timeout_ms = o.timeout_ms;
  cs.seen.assign(static_cast<size_t>(o.num_records), 0);

  auto cons = make_handle(RD_KAFKA_CONSUMER, o.k.bootstrap,
                          {{"group.id", "strata-perf-e2e"},
                           {"enable.auto.commit", "false"},
                           {"enable.partition.eof", "true"},
                           {"fetch.wait.max.ms", "100"},
                           {"auto.offset.reset", "earliest"}},
                          o.consumer_props);
  if (!cons.ok()) return cons.status();
  auto prod = make_handle(
      RD_KAFKA_PRODUCER, o.k.bootstrap,
      {{"acks", "1"}, {"linger.ms", "0"}, {"message.timeout.ms", std::to_string(o.timeout_ms)}},
      o.k.props);
  if (!prod.ok()) {
    rd_kafka_destroy(*cons);
    return prod.status();
  }
  rd_kafka_t* consumer = *cons;
  rd_kafka_t* producer = *prod;
  auto parts = assign_all(consumer, o.k.topic);
  if (!parts.ok()) {
    rd_kafka_destroy(producer);
    rd_kafka_destroy(consumer);
    return parts.status();
  }
  std::thread ct([&] { consume_loop(consumer, *parts, cs); });
  // Start producing once the consumer has caught up with what the topic already holds.
  auto wait0 = Clock::now();
  while (!cs.ready.load() && seconds_since(wait0) * 1000 < o.timeout_ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(producer, o.k.topic.c_str(), nullptr);
  std::vector<char> payload(static_cast<size_t>(o.record_size), 'e');
  std::memcpy(payload.data(), &cs.nonce, 8);
  Status result;  // the consumer's own status is read only after join()
  Progress progress("e2e", cs.counters, "records", "bytes");
  const auto t0 = Clock::now();
  const double per_record_s = 1.0 / static_cast<double>(o.throughput);
  for (int64_t i = 0; result.ok() && i < o.num_records;) {
    const auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(static_cast<double>(i) * per_record_s));
    while (Clock::now() < due) {
      rd_kafka_poll(producer, 0);
      std::this_thread::sleep_until(std::min(due, Clock::now() + std::chrono::milliseconds(1)));
    }
    const int64_t sent = now_ns();
    std::memcpy(payload.data() + 8, &i, 8);
    std::memcpy(payload.data() + 16, &sent, 8);
    if (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, payload.data(),
                         payload.size(), nullptr, 0, nullptr) == 0) {
      ++i;
      rd_kafka_poll(producer, 0);
    } else if (rd_kafka_last_error() == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(producer, 10);
    } else {
      result = Status(Errc::io_error,
                      std::string("produce: ") + rd_kafka_err2str(rd_kafka_last_error()));
    }
  }
  if (result.ok()) {
    rd_kafka_resp_err_t fe = rd_kafka_flush(producer, o.timeout_ms);
    if (fe) result = Status(Errc::io_error, std::string("flush: ") + rd_kafka_err2str(fe));
  }
  if (!result.ok()) cs.done.store(true);
  ct.join();
  const double secs = seconds_since(t0);
  progress.stop();
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(producer);
  rd_kafka_destroy(consumer);
  if (result.ok()) result = cs.status;
  if (!result.ok()) return result;
  const int64_t n = cs.counters.ops.load();
  print_summary({{"mode", "e2e"},
                 {"topic", o.k.topic},
                 {"records", n},
                 {"duplicates", cs.duplicates},
                 {"target_records_per_s", o.throughput},
                 {"records_per_s", static_cast<double>(n) / secs},
                 {"seconds", secs},
                 {"latency", latency_json(cs.latency)}});
  return Status::Ok();
}

}  // namespace strata::tools::perf
