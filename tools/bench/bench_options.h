// Command-line options of strata-bench and their parser.
//
// Owned by tools/bench (the throughput benchmark). Plain value types and pure functions;
// parse once on the main thread before any librdkafka handle exists.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/result.h"

namespace strata::tools::bench {

enum class Mode { produce, consume, create };

struct Options {
  Mode mode = Mode::produce;
  std::string bootstrap = "127.0.0.1:9092";
  std::string topic = "strata-bench";
  int64_t num_messages = 1000000;
  int64_t message_bytes = 100;
  int32_t partitions = 0;  // create: partition count; produce/consume: 0 = from metadata
  std::string acks = "1";
  int linger_ms = 5;
  int64_t batch_bytes = 1000000;  // librdkafka batch.size (bytes per partition batch)
  int batch_messages = 100000;    // librdkafka batch.num.messages
  std::string compression = "none";
  // Produce: send this many payload bytes to one partition, then move to the next (round
  // robin), like Kafka's uniform sticky partitioner with batch.size; spreads data evenly.
  // 0 = let librdkafka's partitioner choose.
  int64_t rotate_bytes = -1;  // -1 = batch_bytes
  int timeout_ms = 120000;        // give up if no progress for this long
  // Extra librdkafka properties (-X key=value), applied last.
  std::vector<std::pair<std::string, std::string>> extra;
};

// Parses argv (argv[1] is the mode). Returns invalid_argument with a message on bad input.
Result<Options> parse_options(int argc, char** argv);

// One-paragraph usage text.
const char* usage();

}  // namespace strata::tools::bench
