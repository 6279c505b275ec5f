// strata-bench create: creates the topic through the Admin API (CreateTopics), replication 1.
// An existing topic is not an error, so the bench can be re-run against the same broker.
#include <librdkafka/rdkafka.h>

#include <string>

#include "tools/bench/bench_common.h"

namespace strata::tools::bench {

Status run_create(const Options& o) {
  auto conf_r = base_conf(o, true);
  if (!conf_r.ok()) return conf_r.status();
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, *conf_r, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(*conf_r);
    return Status(Errc::invalid_argument, std::string("rd_kafka_new: ") + err);
  }
  rd_kafka_NewTopic_t* nt = rd_kafka_NewTopic_new(o.topic.c_str(), o.partitions, 1, err, sizeof err);
  if (!nt) {
    rd_kafka_destroy(rk);
    return Status(Errc::invalid_argument, std::string("NewTopic: ") + err);
  }
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 30000, err, sizeof err);
  rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 60000);
  Status result;
  if (!ev) {
    result = Status(Errc::io_error, "CreateTopics: timed out");
  } else if (rd_kafka_event_error(ev)) {
    result = Status(Errc::io_error, std::string("CreateTopics: ") + rd_kafka_event_error_string(ev));
  } else {
    size_t cnt = 0;
    const rd_kafka_topic_result_t** res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
    for (size_t i = 0; i < cnt; ++i) {
      rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
      if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        const char* msg = rd_kafka_topic_result_error_string(res[i]);
        result = Status(Errc::io_error, std::string("CreateTopics ") + o.topic + ": " +
                                            rd_kafka_err2str(e) + (msg ? std::string(" ") + msg : ""));
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return result;
}

}  // namespace strata::tools::bench
