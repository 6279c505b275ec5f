// Drives librdkafka's C admin API for the group tests (confluent-kafka 1.7 and KafkaJS 2.2.4 lack
// these calls):
//   rdkafka_group_admin BOOTSTRAP delete-offsets GROUP TOPIC PARTITION
//   rdkafka_group_admin BOOTSTRAP delete-group GROUP
// Prints one line per result: "group <err-name>" and, for delete-offsets, "<topic> <partition>
// <err-name>". Exits 0 when the call itself completed (per-item errors are printed, not fatal).
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int fail(const char* what) {
  std::fprintf(stderr, "rdkafka_group_admin: %s\n", what);
  return 2;
}

void print_group(const rd_kafka_group_result_t* g) {
  const rd_kafka_error_t* err = rd_kafka_group_result_error(g);
  std::printf("group %s\n", err ? rd_kafka_err2name(rd_kafka_error_code(err)) : "NO_ERROR");
  const rd_kafka_topic_partition_list_t* parts = rd_kafka_group_result_partitions(g);
  for (int i = 0; parts && i < parts->cnt; ++i) {
    std::printf("%s %d %s\n", parts->elems[i].topic, parts->elems[i].partition,
                rd_kafka_err2name(parts->elems[i].err));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return fail("usage: BOOTSTRAP delete-offsets|delete-group GROUP [TOPIC PARTITION]");
  const std::string mode = argv[2];
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) !=
      RD_KAFKA_CONF_OK) {
    return fail(errstr);
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) return fail(errstr);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  rd_kafka_event_type_t want;
  if (mode == "delete-offsets" && argc == 6) {
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, argv[4], std::atoi(argv[5]));
    rd_kafka_DeleteConsumerGroupOffsets_t* del =
        rd_kafka_DeleteConsumerGroupOffsets_new(argv[3], parts);
    rd_kafka_topic_partition_list_destroy(parts);
    rd_kafka_DeleteConsumerGroupOffsets(rk, &del, 1, nullptr, q);
    rd_kafka_DeleteConsumerGroupOffsets_destroy(del);
    want = RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT;
  } else if (mode == "delete-group") {
    rd_kafka_DeleteGroup_t* del = rd_kafka_DeleteGroup_new(argv[3]);
    rd_kafka_DeleteGroups(rk, &del, 1, nullptr, q);
    rd_kafka_DeleteGroup_destroy(del);
    want = RD_KAFKA_EVENT_DELETEGROUPS_RESULT;
  } else {
    return fail("bad arguments");
  }
  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  int rc = 0;
  if (!ev || rd_kafka_event_type(ev) != want) {
    rc = fail("no admin result within 30 s");
  } else if (rd_kafka_event_error(ev)) {
    std::printf("request %s\n", rd_kafka_err2name(rd_kafka_event_error(ev)));
  } else {
    size_t n = 0;
    const rd_kafka_group_result_t** groups =
        want == RD_KAFKA_EVENT_DELETEGROUPS_RESULT
            ? rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &n)
            : rd_kafka_DeleteConsumerGroupOffsets_result_groups(
                  rd_kafka_event_DeleteConsumerGroupOffsets_result(ev), &n);
    for (size_t i = 0; i < n; ++i) print_group(groups[i]);
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return rc;
}
