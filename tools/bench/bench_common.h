// Shared helpers of strata-bench: librdkafka configuration, timing and the JSON result line.
//
// Owned by tools/bench. Functions are called from the main thread only (librdkafka callbacks
// in the bench run on the thread that polls, which is also the main thread).
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "protocol/base/result.h"
#include "tools/bench/bench_options.h"

namespace strata::tools::bench {

// What one run measured; printed as one JSON line.
struct RunResult {
  const char* mode = "";
  int64_t msgs = 0;
  int64_t bytes = 0;  // payload bytes (keys/headers not counted; the bench sends neither)
  double seconds = 0;
};

// Sets one property; on failure returns invalid_argument naming it.
Status conf_set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value);

// New conf with bootstrap.servers and the -X extras applied last. Caller owns it.
Result<rd_kafka_conf_t*> base_conf(const Options& o, bool extras_now);

// Applies the -X extras (so they override mode defaults).
Status apply_extras(rd_kafka_conf_t* conf, const Options& o);

// Partition count of a topic from a Metadata request (not_found if the topic is unknown).
Result<int32_t> partition_count(rd_kafka_t* rk, const std::string& topic);

// Prints {"mode","msgs","bytes","seconds","msgs_per_s","mb_per_s"} on stdout, flushed.
void print_result(const RunResult& r);

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The modes; each returns the measurement or why it failed.
Result<RunResult> run_produce(const Options& o);
Result<RunResult> run_consume(const Options& o);
Status run_create(const Options& o);

}  // namespace strata::tools::bench
