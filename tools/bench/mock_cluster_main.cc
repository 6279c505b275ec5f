// mock-cluster: runs librdkafka's in-memory mock cluster (rdkafka_mock.h) in its own process
// for the throughput benchmark's baseline.
//
// usage: mock-cluster [--brokers N] TOPIC:PARTITIONS...
// Creates each topic, prints the bootstrap address as the first stdout line and serves until
// SIGTERM/SIGINT. The mock keeps only the newest ~5 MiB per partition, so give topics enough
// partitions to hold everything a consume run will read back.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  int brokers = 1;
  int first_topic = 1;
  if (argc >= 3 && std::string(argv[1]) == "--brokers") {
    brokers = std::atoi(argv[2]);
    first_topic = 3;
  }
  if (first_topic >= argc || brokers < 1) {
    std::fprintf(stderr, "usage: mock-cluster [--brokers N] TOPIC:PARTITIONS...\n");
    return 2;
  }
  // Block SIGTERM/SIGINT before librdkafka starts threads (they inherit the mask), then wait for
  // them synchronously on this thread.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The handle only hosts the mock; keep it from trying to reach a real cluster.
  rd_kafka_conf_set(conf, "bootstrap.servers", "", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk) {
    std::fprintf(stderr, "mock-cluster: rd_kafka_new: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) {
    std::fprintf(stderr, "mock-cluster: rd_kafka_mock_cluster_new failed\n");
    rd_kafka_destroy(rk);
    return 1;
  }
  for (int i = first_topic; i < argc; ++i) {
    std::string spec = argv[i];
    auto colon = spec.rfind(':');
    int parts = colon == std::string::npos ? 0 : std::atoi(spec.c_str() + colon + 1);
    if (parts <= 0) {
      std::fprintf(stderr, "mock-cluster: bad topic spec %s (want TOPIC:PARTITIONS)\n", argv[i]);
      return 2;
    }
    std::string topic = spec.substr(0, colon);
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, topic.c_str(), parts, 1);
    if (e) {
      std::fprintf(stderr, "mock-cluster: topic %s: %s\n", topic.c_str(), rd_kafka_err2str(e));
      return 1;
    }
  }
  std::printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
