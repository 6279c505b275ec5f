// strata-perf create: CreateTopics through librdkafka's Admin API (replication factor 1 unless
// --replication-factor says otherwise) with topic configs, e.g. table.type=primary-key. An
// existing topic is accepted so runs can be repeated.
#include <librdkafka/rdkafka.h>

#include "tools/perf/kafka_util.h"
#include "tools/perf/options.h"
#include "tools/perf/report.h"

namespace strata::tools::perf {

Status run_create(const CreateOptions& o) {
  auto rk_r = make_handle(RD_KAFKA_PRODUCER, o.k.bootstrap, {}, o.k.props);
  if (!rk_r.ok()) return rk_r.status();
  rd_kafka_t* rk = *rk_r;
  char err[512];
  rd_kafka_NewTopic_t* nt =
      rd_kafka_NewTopic_new(o.k.topic.c_str(), o.partitions, o.replication_factor, err, sizeof err);
  if (!nt) {
    rd_kafka_destroy(rk);
    return Status(Errc::invalid_argument, std::string("NewTopic: ") + err);
  }
  Status result;
  for (const auto& c : o.configs) {
    const auto eq = c.find('=');
    if (eq == std::string::npos || eq == 0) {
      result = Status(Errc::invalid_argument, "config not key=value: " + c);
      break;
    }
    rd_kafka_NewTopic_set_config(nt, c.substr(0, eq).c_str(), c.substr(eq + 1).c_str());
  }
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 30000, err, sizeof err);
  rd_kafka_event_t* ev = nullptr;
  if (result.ok()) {
    rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
    ev = rd_kafka_queue_poll(q, 60000);
    if (!ev) {
      result = Status(Errc::io_error, "CreateTopics: timed out");
    } else if (rd_kafka_event_error(ev)) {
      result =
          Status(Errc::io_error, std::string("CreateTopics: ") + rd_kafka_event_error_string(ev));
    } else {
      size_t cnt = 0;
      const rd_kafka_topic_result_t** res =
          rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &cnt);
      for (size_t i = 0; i < cnt; ++i) {
        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
        if (e && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
          const char* msg = rd_kafka_topic_result_error_string(res[i]);
          result = Status(Errc::io_error, "CreateTopics " + o.k.topic + ": " + rd_kafka_err2str(e) +
                                              (msg ? std::string(" ") + msg : ""));
        }
      }
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  if (!result.ok()) return result;
  print_summary({{"mode", "create"}, {"topic", o.k.topic}, {"partitions", o.partitions}});
  return Status::Ok();
}

}  // namespace strata::tools::perf
