// librdkafka configuration helpers and result printing for strata-bench.
#include "tools/bench/bench_common.h"

#include <cstdio>

namespace strata::tools::bench {

Status conf_set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    return Status(Errc::invalid_argument, key + "=" + value + ": " + err);
  }
  return Status::Ok();
}

Status apply_extras(rd_kafka_conf_t* conf, const Options& o) {
  for (const auto& [k, v] : o.extra) STRATA_RETURN_IF_ERROR(conf_set(conf, k, v));
  return Status::Ok();
}

Result<rd_kafka_conf_t*> base_conf(const Options& o, bool extras_now) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  Status st = conf_set(conf, "bootstrap.servers", o.bootstrap);
  if (st.ok()) st = conf_set(conf, "client.id", "strata-bench");
  if (st.ok() && extras_now) st = apply_extras(conf, o);
  if (!st.ok()) {
    rd_kafka_conf_destroy(conf);
    return st;
  }
  return conf;
}

Result<int32_t> partition_count(rd_kafka_t* rk, const std::string& topic) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
  rd_kafka_topic_destroy(rkt);
  if (err) return Status(Errc::io_error, std::string("metadata: ") + rd_kafka_err2str(err));
  int32_t n = 0;
  rd_kafka_resp_err_t terr = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
  if (md->topic_cnt == 1) {
    n = md->topics[0].partition_cnt;
    terr = md->topics[0].err;
  }
  rd_kafka_metadata_destroy(md);
  if (terr || n <= 0) {
    return Status(Errc::not_found, "topic " + topic + ": " + rd_kafka_err2str(terr));
  }
  return n;
}


void print_result(const RunResult& r) {
  double secs = r.seconds > 0 ? r.seconds : 1e-9;
  std::printf(
      "{\"mode\":\"%s\",\"msgs\":%lld,\"bytes\":%lld,\"seconds\":%.3f,\"msgs_per_s\":%.1f,"
      "\"mb_per_s\":%.2f}\n",
      r.mode, static_cast<long long>(r.msgs), static_cast<long long>(r.bytes), r.seconds,
      static_cast<double>(r.msgs) / secs, static_cast<double>(r.bytes) / secs / (1024.0 * 1024.0));
  std::fflush(stdout);
}

}  // namespace strata::tools::bench
