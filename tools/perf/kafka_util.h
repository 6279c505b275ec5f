// librdkafka helpers of strata-perf: configuration from "key=value" lists, handle creation and a
// partition count from metadata.
//
// Owned by tools/perf. Called from the main thread of a run.
#pragma once

#include <librdkafka/rdkafka.h>

#include <string>
#include <utility>
#include <vector>

#include "protocol/base/result.h"
#include "tools/perf/options.h"

namespace strata::tools::perf {

Status conf_set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value);

// A producer or consumer handle: bootstrap.servers, then `defaults`, then `props` ("k=v", which
// override the defaults). `opaque` and the delivery callback (producers) are set when non-null.
Result<rd_kafka_t*> make_handle(rd_kafka_type_t type, const std::string& bootstrap,
                                const std::vector<std::pair<std::string, std::string>>& defaults,
                                const Props& props, void* opaque = nullptr,
                                void (*dr_msg_cb)(rd_kafka_t*, const rd_kafka_message_t*,
                                                  void*) = nullptr);

// Partition count of `topic` from a Metadata request.
Result<int32_t> partition_count(rd_kafka_t* rk, const std::string& topic);

// Assigns every partition of `topic` at offset 0 to consumer `rk`; returns the partition count.
Result<int32_t> assign_all(rd_kafka_t* rk, const std::string& topic);

}  // namespace strata::tools::perf
