// Drives librdkafka's C admin API for ACLs (rd_kafka_CreateAcls / DescribeAcls / DeleteAcls;
// confluent-kafka 1.7's Python AdminClient has no ACL calls):
//   rdkafka_acl_admin BOOTSTRAP [-X key=value]... create   RES NAME PATTERN PRINCIPAL HOST OP PERM
//   rdkafka_acl_admin BOOTSTRAP [-X key=value]... describe RES NAME PATTERN PRINCIPAL HOST OP PERM
//   rdkafka_acl_admin BOOTSTRAP [-X key=value]... delete   RES NAME PATTERN PRINCIPAL HOST OP PERM
// RES/PATTERN/OP/PERM are librdkafka's names, case-insensitive (TOPIC, GROUP, BROKER = Kafka's
// CLUSTER; LITERAL, PREFIXED, MATCH, ANY; READ, WRITE, ...; ALLOW, DENY, ANY); NAME, PRINCIPAL and
// HOST may be "-" (null: any) in filters. -X sets client properties (security.protocol, sasl.*).
// Prints "request <err>" for a request-level error, else for create "acl <err>" per binding, for
// describe "error <err>" then one line per binding, for delete "response <err>" then the bindings
// it removed; a binding line is "RES NAME PATTERN PRINCIPAL HOST OP PERM". Exit 0 when a result
// arrived, 2 on bad arguments or no result.
#include <librdkafka/rdkafka.h>
#include <strings.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int fail(const std::string& what) {
  std::fprintf(stderr, "rdkafka_acl_admin: %s\n", what.c_str());
  return 2;
}

// The enum value whose librdkafka name is `name` (case-insensitive), -1 when none.
template <typename E>
int parse_enum(const char* name, int count, const char* (*name_of)(E)) {
  for (int i = 0; i < count; ++i) {
    if (strcasecmp(name, name_of(static_cast<E>(i))) == 0) return i;
  }
  return -1;
}

void print_binding(const rd_kafka_AclBinding_t* b) {
  auto s = [](const char* v) { return v ? v : "-"; };
  std::printf("%s %s %s %s %s %s %s\n", rd_kafka_ResourceType_name(rd_kafka_AclBinding_restype(b)),
              s(rd_kafka_AclBinding_name(b)),
              rd_kafka_ResourcePatternType_name(rd_kafka_AclBinding_resource_pattern_type(b)),
              s(rd_kafka_AclBinding_principal(b)), s(rd_kafka_AclBinding_host(b)),
              rd_kafka_AclOperation_name(rd_kafka_AclBinding_operation(b)),
              rd_kafka_AclPermissionType_name(rd_kafka_AclBinding_permission_type(b)));
}

const char* err_name(const rd_kafka_error_t* e) {
  return e ? rd_kafka_err2name(rd_kafka_error_code(e)) : "NO_ERROR";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return fail("usage: BOOTSTRAP [-X k=v]... create|describe|delete ...");
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], errstr, sizeof errstr) !=
      RD_KAFKA_CONF_OK) {
    return fail(errstr);
  }
  int i = 2;
  for (; i + 1 < argc && std::strcmp(argv[i], "-X") == 0; i += 2) {
    std::string kv = argv[i + 1];
    auto eq = kv.find('=');
    if (eq == std::string::npos) return fail("-X wants key=value: " + kv);
    if (rd_kafka_conf_set(conf, kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), errstr,
                          sizeof errstr) != RD_KAFKA_CONF_OK) {
      return fail(errstr);
    }
  }
  if (argc - i != 8) return fail("want: MODE RES NAME PATTERN PRINCIPAL HOST OP PERM");
  const std::string mode = argv[i];
  auto opt = [](const char* v) -> const char* { return std::strcmp(v, "-") == 0 ? nullptr : v; };
  const int res = parse_enum(argv[i + 1], RD_KAFKA_RESOURCE__CNT, rd_kafka_ResourceType_name);
  const int pat = parse_enum(argv[i + 3], RD_KAFKA_RESOURCE_PATTERN_TYPE__CNT,
                             rd_kafka_ResourcePatternType_name);
  const int op = parse_enum(argv[i + 6], RD_KAFKA_ACL_OPERATION__CNT, rd_kafka_AclOperation_name);
  const int perm =
      parse_enum(argv[i + 7], RD_KAFKA_ACL_PERMISSION_TYPE__CNT, rd_kafka_AclPermissionType_name);
  if (res < 0 || pat < 0 || op < 0 || perm < 0) return fail("unknown enum name");

  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) return fail(errstr);
  rd_kafka_queue_t* q = rd_kafka_queue_new(rk);
  const bool create = mode == "create";
  rd_kafka_AclBinding_t* b =
      create ? rd_kafka_AclBinding_new(
                   static_cast<rd_kafka_ResourceType_t>(res), argv[i + 2],
                   static_cast<rd_kafka_ResourcePatternType_t>(pat), argv[i + 4], argv[i + 5],
                   static_cast<rd_kafka_AclOperation_t>(op),
                   static_cast<rd_kafka_AclPermissionType_t>(perm), errstr, sizeof errstr)
             : rd_kafka_AclBindingFilter_new(
                   static_cast<rd_kafka_ResourceType_t>(res), opt(argv[i + 2]),
                   static_cast<rd_kafka_ResourcePatternType_t>(pat), opt(argv[i + 4]),
                   opt(argv[i + 5]), static_cast<rd_kafka_AclOperation_t>(op),
                   static_cast<rd_kafka_AclPermissionType_t>(perm), errstr, sizeof errstr);
  if (!b) return fail(errstr);
  rd_kafka_event_type_t want;
  if (create) {
    rd_kafka_CreateAcls(rk, &b, 1, nullptr, q);
    want = RD_KAFKA_EVENT_CREATEACLS_RESULT;
  } else if (mode == "describe") {
    rd_kafka_DescribeAcls(rk, b, nullptr, q);
    want = RD_KAFKA_EVENT_DESCRIBEACLS_RESULT;
  } else if (mode == "delete") {
    rd_kafka_DeleteAcls(rk, &b, 1, nullptr, q);
    want = RD_KAFKA_EVENT_DELETEACLS_RESULT;
  } else {
    return fail("unknown mode " + mode);
  }
  rd_kafka_AclBinding_destroy(b);

  rd_kafka_event_t* ev = rd_kafka_queue_poll(q, 30000);
  int rc = 0;
  if (!ev || rd_kafka_event_type(ev) != want) {
    rc = fail("no admin result within 30 s");
  } else if (rd_kafka_event_error(ev)) {
    std::printf("request %s\n", rd_kafka_err2name(rd_kafka_event_error(ev)));
  } else if (create) {
    size_t n = 0;
    const rd_kafka_acl_result_t** r =
        rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &n);
    for (size_t k = 0; k < n; ++k)
      std::printf("acl %s\n", err_name(rd_kafka_acl_result_error(r[k])));
  } else if (want == RD_KAFKA_EVENT_DESCRIBEACLS_RESULT) {
    std::printf("error NO_ERROR\n");
    size_t n = 0;
    const rd_kafka_AclBinding_t** acls =
        rd_kafka_DescribeAcls_result_acls(rd_kafka_event_DescribeAcls_result(ev), &n);
    for (size_t k = 0; k < n; ++k) print_binding(acls[k]);
  } else {
    size_t n = 0;
    const rd_kafka_DeleteAcls_result_response_t** rs =
        rd_kafka_DeleteAcls_result_responses(rd_kafka_event_DeleteAcls_result(ev), &n);
    for (size_t k = 0; k < n; ++k) {
      std::printf("response %s\n", err_name(rd_kafka_DeleteAcls_result_response_error(rs[k])));
      size_t m = 0;
      const rd_kafka_AclBinding_t** acls =
          rd_kafka_DeleteAcls_result_response_matching_acls(rs[k], &m);
      for (size_t j = 0; j < m; ++j) print_binding(acls[j]);
    }
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return rc;
}
