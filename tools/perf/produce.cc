// strata-perf produce: librdkafka producer load like kafka-producer-perf-test — N records of S
// bytes at a target rate (or unlimited), latency from send to delivery report per record. With
// --transactional N: a transactional producer committing every N records, commit latency (the
// commit call, which flushes the transaction's records and waits for the markers) reported too.
#include <librdkafka/rdkafka.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tools/perf/kafka_util.h"
#include "tools/perf/options.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {
namespace {

struct DeliveryState {
  Counters counters;
  Histogram latency;
  int64_t failed = 0;
  rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
  Clock::time_point t0;
};

// Runs on the thread calling rd_kafka_poll/flush (the main thread). The send time (ns since t0)
// travels in the message opaque, so nothing is allocated per record.
void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* s = static_cast<DeliveryState*>(opaque);
  if (m->err) {
    if (s->failed++ == 0) s->first_error = m->err;
    s->counters.errors.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const auto sent_ns = static_cast<int64_t>(reinterpret_cast<intptr_t>(m->_private));
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - s->t0).count();
  s->latency.record(static_cast<uint64_t>(std::max<int64_t>(0, now_ns - sent_ns)));
  s->counters.ops.fetch_add(1, std::memory_order_relaxed);
  s->counters.items.fetch_add(static_cast<int64_t>(m->len), std::memory_order_relaxed);
}

}  // namespace

Status run_produce(const ProduceOptions& o) {
  if (o.record_size < 0 || o.num_records < 0) {
    return Status(Errc::invalid_argument, "--num-records and --record-size must be >= 0");
  }
  DeliveryState s;
  const bool txn = o.transactional > 0;
  std::vector<std::pair<std::string, std::string>> conf = {
      {"acks", txn ? "all" : "1"},  // transactions need the idempotent producer's acks=all
      {"linger.ms", "5"},
      // PK tables append a larger changelog batch (strata.* headers):
      // keep it under the default max.message.bytes (1 MiB).
      {"batch.size", o.key_space > 0 ? "262144" : "1000000"},
      {"batch.num.messages", "100000"},
      {"queue.buffering.max.messages", "1000000"},
      {"queue.buffering.max.kbytes", "1048576"},
      {"message.timeout.ms", std::to_string(o.timeout_ms)}};
  if (txn) {
    // librdkafka wants message.timeout.ms <= transaction.timeout.ms.
    conf.emplace_back("transaction.timeout.ms", std::to_string(o.timeout_ms));
    conf.emplace_back("transactional.id",
                      "strata-perf-" + std::to_string(getpid()) + "-" +
                          std::to_string(Clock::now().time_since_epoch().count()));
  }
  auto rk_r = make_handle(RD_KAFKA_PRODUCER, o.k.bootstrap, conf, o.k.props, &s, on_delivery);
  if (!rk_r.ok()) return rk_r.status();
  rd_kafka_t* rk = *rk_r;
  // Transactions: the rd_kafka_error_t of each call becomes a Status.
  auto txn_call = [](const char* what, rd_kafka_error_t* e) {
    if (!e) return Status::Ok();
    Status st(Errc::io_error, std::string(what) + ": " + rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return st;
  };
  Histogram commit_latency;
  int64_t transactions = 0;
  if (txn) {
    Status st = txn_call("init_transactions", rd_kafka_init_transactions(rk, o.timeout_ms));
    if (st.ok()) st = txn_call("begin_transaction", rd_kafka_begin_transaction(rk));
    if (!st.ok()) {
      rd_kafka_destroy(rk);
      return st;
    }
  }
  auto commit = [&](bool again) {
    const auto c0 = Clock::now();
    Status st = txn_call("commit_transaction", rd_kafka_commit_transaction(rk, o.timeout_ms));
    commit_latency.record(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - c0).count()));
    ++transactions;
    if (st.ok() && again) st = txn_call("begin_transaction", rd_kafka_begin_transaction(rk));
    return st;
  };
  auto parts = partition_count(rk, o.k.topic);  // metadata before the clock starts
  if (!parts.ok()) {
    rd_kafka_destroy(rk);
    return parts.status();
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.k.topic.c_str(), nullptr);

  std::vector<char> payload(static_cast<size_t>(o.record_size));
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (char& c : payload) {  // printable, not trivially compressible
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    c = static_cast<char>('!' + x % 90);
  }
  char key[32];
  Status result;
  Progress progress("produce", s.counters, "records", "bytes");
  s.t0 = Clock::now();
  // Records per partition before rotating (16 B approximates a small record's framing).
  const int64_t per_partition = o.rotate_bytes > 0 && o.key_space <= 0
                                    ? std::max<int64_t>(1, o.rotate_bytes / (o.record_size + 16))
                                    : 0;
  int32_t partition = per_partition > 0 ? 0 : RD_KAFKA_PARTITION_UA;
  int64_t in_partition = 0;
  const double per_record_s = o.throughput > 0 ? 1.0 / static_cast<double>(o.throughput) : 0;
  for (int64_t i = 0; i < o.num_records;) {
    if (per_record_s > 0) {
      const auto due =
          s.t0 + std::chrono::duration_cast<Clock::duration>(
                     std::chrono::duration<double>(static_cast<double>(i) * per_record_s));
      while (Clock::now() < due) {
        rd_kafka_poll(rk, 0);
        std::this_thread::sleep_until(std::min(due, Clock::now() + std::chrono::milliseconds(1)));
      }
    }
    if (per_partition > 0 && in_partition == per_partition) {
      partition = partition + 1 == *parts ? 0 : partition + 1;
      in_partition = 0;
    }
    const void* kp = nullptr;
    size_t klen = 0;
    if (o.key_space > 0) {
      klen =
          static_cast<size_t>(std::snprintf(key, sizeof key, "key:%012" PRId64, i % o.key_space));
      kp = key;
    }
    const int64_t sent_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - s.t0).count();
    if (rd_kafka_produce(rkt, partition, RD_KAFKA_MSG_F_COPY, payload.data(), payload.size(), kp,
                         klen, reinterpret_cast<void*>(static_cast<intptr_t>(sent_ns))) == 0) {
      ++i;
      ++in_partition;
      if ((i & 1023) == 0) rd_kafka_poll(rk, 0);
      if (txn && i % o.transactional == 0) {
        result = commit(i < o.num_records);
        if (!result.ok()) break;
      }
      continue;
    }
    rd_kafka_resp_err_t e = rd_kafka_last_error();
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      result = Status(Errc::io_error, std::string("produce: ") + rd_kafka_err2str(e));
      break;
    }
    rd_kafka_poll(rk, 10);
  }
  if (result.ok() && txn && o.num_records % o.transactional != 0) result = commit(false);
  if (result.ok()) {
    rd_kafka_resp_err_t fe = rd_kafka_flush(rk, o.timeout_ms);
    if (fe) result = Status(Errc::io_error, std::string("flush: ") + rd_kafka_err2str(fe));
  }
  const double secs = seconds_since(s.t0);
  progress.stop();
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  if (result.ok() && s.failed > 0) {
    result = Status(Errc::io_error, std::to_string(s.failed) + " records failed, first: " +
                                        rd_kafka_err2str(s.first_error));
  }
  if (!result.ok()) return result;
  const int64_t n = s.counters.ops.load();
  const int64_t bytes = s.counters.items.load();
  nlohmann::json j{{"mode", "produce"},
                   {"topic", o.k.topic},
                   {"records", n},
                   {"bytes", bytes},
                   {"seconds", secs},
                   {"records_per_s", static_cast<double>(n) / secs},
                   {"mb_per_s", static_cast<double>(bytes) / secs / (1024.0 * 1024.0)},
                   {"latency", latency_json(s.latency)}};
  if (txn) {
    j["records_per_transaction"] = o.transactional;
    j["transactions"] = transactions;
    j["commit_latency"] = latency_json(commit_latency);
  }
  print_summary(j);
  return Status::Ok();
}

}  // namespace strata::tools::perf
