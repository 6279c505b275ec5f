// librdkafka helpers of strata-perf (see kafka_util.h).
#include "tools/perf/kafka_util.h"

namespace strata::tools::perf {

Status conf_set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    return Status(Errc::invalid_argument, key + "=" + value + ": " + err);
  }
  return Status::Ok();
}

Result<rd_kafka_t*> make_handle(rd_kafka_type_t type, const std::string& bootstrap,
                                const std::vector<std::pair<std::string, std::string>>& defaults,
                                const Props& props, void* opaque,
                                void (*dr_msg_cb)(rd_kafka_t*, const rd_kafka_message_t*, void*)) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  Status st = conf_set(conf, "bootstrap.servers", bootstrap);
  if (st.ok()) st = conf_set(conf, "client.id", "strata-perf");
  for (const auto& kv : defaults) {
    if (st.ok()) st = conf_set(conf, kv.first, kv.second);
  }
  for (const auto& p : props) {
    if (!st.ok()) break;
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      st = Status(Errc::invalid_argument, "property not key=value: " + p);
      break;
    }
    st = conf_set(conf, p.substr(0, eq), p.substr(eq + 1));
  }
  if (!st.ok()) {
    rd_kafka_conf_destroy(conf);
    return st;
  }
  if (opaque) rd_kafka_conf_set_opaque(conf, opaque);
  if (dr_msg_cb) rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return Status(Errc::invalid_argument, std::string("rd_kafka_new: ") + err);
  }
  return rk;
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

Result<int32_t> assign_all(rd_kafka_t* rk, const std::string& topic) {
  auto n = partition_count(rk, topic);
  if (!n.ok()) return n.status();
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(*n);
  for (int32_t p = 0; p < *n; ++p) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = 0;
  }
  rd_kafka_resp_err_t err = rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (err) return Status(Errc::io_error, std::string("assign: ") + rd_kafka_err2str(err));
  return *n;
}

}  // namespace strata::tools::perf
