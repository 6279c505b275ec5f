// ReplicaFetcher against a real in-process single-node broker (which serves replica fetches as a
// leader without follower tracking): the follower's log ends equal to the leader's, batch for
// batch and byte for byte; a divergent local suffix (an epoch the leader never had, or a longer
// log at an older epoch) is truncated first; a follower's long poll is woken by the leader's log
// end; an unreachable or garbage-speaking leader is retried without crashing and stop() returns
// promptly; remove() while fetching leaves the log alone from then on.
#include "broker/cluster/replica_fetcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "broker/broker.h"
#include "broker/config/config.h"
#include "protocol/messages/api_versions.h"
#include "protocol/wire/writer.h"
#include "test/unit/storage/test_util.h"
#include "tools/client/client.h"

namespace strata::broker::cluster {
namespace {

using namespace std::chrono_literals;
using storage::PartitionLog;
using storage::testing::TempDir;

// Polls `done` every few ms until it holds or `timeout` passed.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 15s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return done();
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

std::vector<uint8_t> all_bytes(const PartitionLog& log) {
  auto r = log.read(log.log_start_offset(), 1 << 30, true, INT64_MAX);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? storage::testing::read_bytes(*r) : std::vector<uint8_t>{};
}

// One broker serving on a loopback port from the OS, its data in `dir` (kept across restarts).
class LeaderBroker {
 public:
  explicit LeaderBroker(std::string dir) : dir_(std::move(dir)) { start(); }
  ~LeaderBroker() { stop(); }

  void start() {
    auto config = parse_config(
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        "metrics.listener=\n"
        "schema.registry.listener=\n"
        "log.dirs=" +
            dir_ +
            "\n"
            "num.io.threads=2\n"
            "auto.create.topics.enable=false\n",
        {});
    ASSERT_TRUE(config.ok()) << config.status().to_string();
    broker_ = std::make_unique<Broker>(*config);
    ASSERT_TRUE(broker_->start().ok());
    serving_ = std::thread([this] { broker_->run(); });
    port_ = broker_->bound_listeners().front().port;
    client::ClientOptions o;
    o.bootstrap = "127.0.0.1:" + std::to_string(port_);
    client_ = std::make_unique<client::Client>(o);
    ASSERT_TRUE(client_->connect().ok());
  }
  void stop() {
    if (!broker_) return;
    client_.reset();
    broker_->shutdown();
    serving_.join();
    broker_.reset();
  }

  int port() const { return port_; }
  int32_t node_id() const { return broker_->node_id(); }
  void create_topic(const std::string& name, int partitions) {
    ASSERT_TRUE(client_->create_topic({name, partitions, 1, {}}).ok());
  }
  PartitionLog& log(const std::string& topic, int32_t partition) {
    auto t = broker_->topics().find(topic);
    EXPECT_TRUE(t);
    return *t->partition(partition);
  }
  // One batch of `records` records on `partition`.
  void produce(const std::string& topic, int32_t partition, int records, const std::string& tag) {
    std::vector<client::ProduceRecord> batch(static_cast<size_t>(records));
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].partition = partition;
      batch[i].key = tag;
      batch[i].value = std::string(40, static_cast<char>('a' + static_cast<int>(i % 26)));
    }
    auto r = client_->produce(topic, batch);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
  }

 private:
  std::string dir_;
  std::unique_ptr<Broker> broker_;
  std::thread serving_;
  int port_ = 0;
  std::unique_ptr<client::Client> client_;
};

storage::LogConfig replicated_config() {
  storage::LogConfig c;
  c.replicated = true;
  c.segment_bytes = 2048;  // several segments: reads and truncations cross them
  return c;
}

std::shared_ptr<PartitionLog> follower_log(const TempDir& d, const std::string& name) {
  return std::shared_ptr<PartitionLog>(
      storage::testing::open_log(storage::default_env(), d.sub(name), replicated_config()));
}

ReplicaFetcher::Options fast_options() {
  ReplicaFetcher::Options o;
  o.self_id = 7;
  o.max_bytes = 700;  // a few batches per fetch: catching up takes several rounds
  o.max_wait_ms = 200;
  o.backoff_ms = 20;
  return o;
}

// A batch of `records` records at `base`, stamped `epoch`, whose values are not the leader's.
std::vector<uint8_t> local_batch(int64_t base, int records, int32_t epoch) {
  protocol::RecordBatchBuilder b;
  b.set_base_offset(base).set_partition_leader_epoch(epoch);
  const std::vector<uint8_t> value(30, 'L');
  for (int i = 0; i < records; ++i) b.add(5000 + i, std::nullopt, std::span<const uint8_t>(value));
  return b.build();
}

bool caught_up(const PartitionLog& follower, const PartitionLog& leader) {
  return follower.log_end_offset() == leader.log_end_offset();
}

TEST(ReplicaFetcher, FollowsTheLeaderByteForByte) {
  TempDir d;
  LeaderBroker leader(d.sub("leader"));
  leader.create_topic("t", 1);
  for (int i = 0; i < 12; ++i) leader.produce("t", 0, 1 + i % 4, "k");
  PartitionLog& lead = leader.log("t", 0);
  ASSERT_EQ(lead.log_end_offset(), 30);

  auto local = follower_log(d, "follower");
  ReplicaFetcher fetcher(leader.node_id(), "127.0.0.1", leader.port(), fast_options());
  fetcher.add("t", 0, local, lead.leader_epoch());
  EXPECT_EQ(fetcher.size(), 1u);
  ASSERT_TRUE(eventually([&] { return caught_up(*local, lead); }));
  EXPECT_EQ(all_bytes(*local), all_bytes(lead));
  EXPECT_GT(fetcher.counters().fetches, 1u);  // 700 bytes a round: more than one

  // Keeps following: new batches arrive, and so does the leader's high watermark.
  for (int i = 0; i < 5; ++i) leader.produce("t", 0, 2, "more");
  ASSERT_TRUE(eventually(
      [&] { return caught_up(*local, lead) && local->high_watermark() == lead.high_watermark(); }));
  const auto bytes = all_bytes(lead);
  EXPECT_EQ(all_bytes(*local), bytes);
  EXPECT_EQ(local->latest_epoch(), lead.latest_epoch());
  EXPECT_EQ(fetcher.counters().bytes, bytes.size());
  EXPECT_EQ(fetcher.counters().truncations, 0u);
  fetcher.stop();
}

TEST(ReplicaFetcher, TruncatesAnEpochTheLeaderNeverHad) {
  TempDir d;
  LeaderBroker leader(d.sub("leader"));
  leader.create_topic("t", 1);
  PartitionLog& lead = leader.log("t", 0);
  for (int i = 0; i < 3; ++i) leader.produce("t", 0, 2, "shared");
  auto local = follower_log(d, "follower");
  ASSERT_TRUE(local->append_as_follower(all_bytes(lead), 0).ok());  // the common prefix: 0..5
  // Then a suffix of our own at an epoch the leader never had, longer than the leader's.
  for (int64_t base = 6; base < 30; base += 4) {
    ASSERT_TRUE(local->append_as_follower(local_batch(base, 4, 9), 0).ok());
  }
  for (int i = 0; i < 4; ++i) leader.produce("t", 0, 3, "leader");
  ASSERT_EQ(lead.log_end_offset(), 18);
  ASSERT_EQ(local->latest_epoch(), 9);

  ReplicaFetcher fetcher(leader.node_id(), "127.0.0.1", leader.port(), fast_options());
  fetcher.add("t", 0, local, lead.leader_epoch());
  ASSERT_TRUE(eventually(
      [&] { return caught_up(*local, lead) && local->latest_epoch() == lead.latest_epoch(); }));
  EXPECT_EQ(all_bytes(*local), all_bytes(lead));
  EXPECT_GE(fetcher.counters().truncations, 1u);
  EXPECT_EQ(local->epoch_for_offset(6), lead.epoch_for_offset(6));  // epoch 9 is gone
}

TEST(ReplicaFetcher, TruncatesALongerLogAtAnOlderEpoch) {
  TempDir d;
  LeaderBroker leader(d.sub("leader"));
  leader.create_topic("t", 1);
  for (int i = 0; i < 3; ++i) leader.produce("t", 0, 2, "epoch0");
  auto local = follower_log(d, "follower");
  ASSERT_TRUE(local->append_as_follower(all_bytes(leader.log("t", 0)), 0).ok());
  const int32_t first_epoch = leader.log("t", 0).latest_epoch();
  // We kept appending at that epoch what the old leader wrote but never committed.
  for (int64_t base = 6; base < 16; base += 5) {
    ASSERT_TRUE(local->append_as_follower(local_batch(base, 5, first_epoch), 0).ok());
  }
  // The leader restarts (a new epoch from offset 6) and takes other batches.
  leader.stop();
  leader.start();
  PartitionLog& lead = leader.log("t", 0);
  ASSERT_GT(lead.leader_epoch(), first_epoch);
  for (int i = 0; i < 2; ++i) leader.produce("t", 0, 3, "epoch1");
  ASSERT_EQ(lead.log_end_offset(), 12);

  ReplicaFetcher fetcher(leader.node_id(), "127.0.0.1", leader.port(), fast_options());
  fetcher.add("t", 0, local, lead.leader_epoch());
  ASSERT_TRUE(eventually(
      [&] { return caught_up(*local, lead) && local->latest_epoch() == lead.latest_epoch(); }));
  EXPECT_EQ(all_bytes(*local), all_bytes(lead));
  EXPECT_EQ(fetcher.counters().truncations, 1u);
  EXPECT_EQ(local->end_offset_for_epoch(first_epoch), lead.end_offset_for_epoch(first_epoch));
}

TEST(ReplicaFetcher, LongPollIsWokenByTheLeadersLogEnd) {
  TempDir d;
  LeaderBroker leader(d.sub("leader"));
  leader.create_topic("t", 1);
  leader.produce("t", 0, 2, "k");
  PartitionLog& lead = leader.log("t", 0);
  auto local = follower_log(d, "follower");
  auto o = fast_options();
  o.max_wait_ms = 30000;  // only an append can answer the poll within the deadline below
  ReplicaFetcher fetcher(leader.node_id(), "127.0.0.1", leader.port(), o);
  fetcher.add("t", 0, local, lead.leader_epoch());
  ASSERT_TRUE(eventually([&] { return caught_up(*local, lead); }));
  for (int i = 0; i < 3; ++i) {
    leader.produce("t", 0, 1, "woken");
    ASSERT_TRUE(eventually([&] { return caught_up(*local, lead); }, 10s)) << i;
  }
  EXPECT_EQ(all_bytes(*local), all_bytes(lead));
  leader.stop();  // answers the poll in flight, so stop() need not wait out max_wait_ms
  fetcher.stop();
}

// A loopback port nothing listens on.
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(ReplicaFetcher, UnreachableLeaderIsRetriedAndStopIsPrompt) {
  TempDir d;
  auto local = follower_log(d, "follower");
  ReplicaFetcher fetcher(3, "127.0.0.1", closed_port(), fast_options());
  fetcher.add("t", 0, local, 0);
  ASSERT_TRUE(eventually([&] { return fetcher.counters().connect_failures >= 3; }));
  const auto t0 = std::chrono::steady_clock::now();
  fetcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(local->log_end_offset(), 0);
  EXPECT_EQ(fetcher.counters().fetches, 0u);
}

// A leader that hangs (SIGSTOP): the kernel completes the handshake, nothing ever answers.
TEST(ReplicaFetcher, RequestStopDoesNotWaitForAHangingLeader) {
  TempDir d;
  auto local = follower_log(d, "follower");
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  auto o = fast_options();
  o.request_timeout_ms = 1500;
  ReplicaFetcher fetcher(3, "127.0.0.1", ntohs(a.sin_port), o);
  fetcher.add("t", 0, local, 0);
  std::this_thread::sleep_for(200ms);  // the thread is now waiting for an answer
  const auto t0 = std::chrono::steady_clock::now();
  fetcher.request_stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms);
  EXPECT_FALSE(fetcher.finished());
  EXPECT_TRUE(eventually([&] { return fetcher.finished(); }));  // at its request timeout
  const auto t1 = std::chrono::steady_clock::now();
  fetcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t1, 100ms);
  EXPECT_EQ(local->log_end_offset(), 0);
  ::close(fd);
}

// A "leader" that answers ApiVersions properly (Fetch 4-12) and every other request with a frame
// of the right correlation id whose body does not decode.
class GarbageLeader {
 public:
  GarbageLeader() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~GarbageLeader() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int fetches_answered() const { return garbage_.load(); }

 private:
  static bool read_n(int fd, uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t r = ::recv(fd, p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  static void send_frame(int fd, const std::vector<uint8_t>& body) {
    std::vector<uint8_t> out(4);
    const uint32_t n = htonl(static_cast<uint32_t>(body.size()));
    std::memcpy(out.data(), &n, 4);
    out.insert(out.end(), body.begin(), body.end());
    (void)::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
  }
  void serve() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      for (;;) {
        uint8_t size[4];
        if (!read_n(c, size, 4)) break;
        uint32_t n;
        std::memcpy(&n, size, 4);
        std::vector<uint8_t> req(ntohl(n));
        if (req.size() < 8 || !read_n(c, req.data(), req.size())) break;
        const int16_t api_key = static_cast<int16_t>((req[0] << 8) | req[1]);
        const int16_t version = static_cast<int16_t>((req[2] << 8) | req[3]);
        protocol::Writer w(64);
        w.write_raw(std::span<const uint8_t>(req.data() + 4, 4));  // correlation id
        if (api_key == protocol::ApiVersionsRequest::kApiKey) {
          protocol::ApiVersionsResponse resp;
          resp.api_keys.push_back({protocol::ApiVersionsRequest::kApiKey, 0, 3});
          resp.api_keys.push_back({1, 4, 12});
          resp.encode(w, version);
        } else {
          w.write_uvarint(0);  // response header v1: no tagged fields
          w.write_int8(1);     // then a body cut short
          ++garbage_;
        }
        send_frame(c, w.buffer());
      }
      ::close(c);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> garbage_{0};
  std::thread thread_;
};

TEST(ReplicaFetcher, UndecodableAnswersCloseAndReconnect) {
  TempDir d;
  auto local = follower_log(d, "follower");
  GarbageLeader garbage;
  ReplicaFetcher fetcher(3, "127.0.0.1", garbage.port(), fast_options());
  fetcher.add("t", 0, local, 0);
  ASSERT_TRUE(eventually([&] { return garbage.fetches_answered() >= 3; }));
  ASSERT_TRUE(eventually([&] { return fetcher.counters().errors >= 3; }));
  const auto t0 = std::chrono::steady_clock::now();
  fetcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(local->log_end_offset(), 0);
}

TEST(ReplicaFetcher, RemoveWhileFetchingLeavesTheLogAlone) {
  TempDir d;
  LeaderBroker leader(d.sub("leader"));
  leader.create_topic("r", 2);
  PartitionLog& lead0 = leader.log("r", 0);
  PartitionLog& lead1 = leader.log("r", 1);
  auto local0 = follower_log(d, "p0");
  auto local1 = follower_log(d, "p1");
  auto o = fast_options();
  o.max_bytes = 1 << 20;  // keeps up with the producer below
  ReplicaFetcher fetcher(leader.node_id(), "127.0.0.1", leader.port(), o);
  fetcher.add("r", 0, local0, lead0.leader_epoch());
  fetcher.add("r", 1, local1, lead1.leader_epoch());

  std::atomic<bool> stop{false};
  std::atomic<int> produced{0};
  std::thread producer([&] {
    client::ClientOptions co;
    co.bootstrap = "127.0.0.1:" + std::to_string(leader.port());
    client::Client c(co);
    while (!stop) {
      std::vector<client::ProduceRecord> recs(2);
      recs[0].partition = 0;
      recs[1].partition = 1;
      recs[0].value = recs[1].value = std::string(50, 'p');
      if (c.produce("r", recs).ok()) ++produced;
      // Paced: the follower logs roll every 2 KiB, so an unpaced producer on a loaded machine
      // leaves the follower thousands of segments behind and the catch-up below times out.
      std::this_thread::sleep_for(2ms);
    }
  });
  ASSERT_TRUE(eventually([&] { return local0->log_end_offset() > 20; }));
  fetcher.remove("r", 0);
  EXPECT_EQ(fetcher.size(), 1u);
  // The caller owns the log again: it may truncate it, and nothing writes to it any more.
  ASSERT_TRUE(local0->truncate_to(0).ok());
  const int after_remove = produced.load();
  ASSERT_TRUE(eventually([&] { return produced.load() >= after_remove + 100; }));
  stop = true;
  producer.join();
  ASSERT_TRUE(eventually([&] { return caught_up(*local1, lead1); }, 30s))
      << "follower at " << local1->log_end_offset() << ", leader at " << lead1.log_end_offset();
  EXPECT_EQ(all_bytes(*local1), all_bytes(lead1));
  EXPECT_EQ(local0->log_end_offset(), 0);
  EXPECT_EQ(local0->latest_epoch(), -1);
  fetcher.stop();
}

}  // namespace
}  // namespace strata::broker::cluster
