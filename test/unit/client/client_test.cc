// Unit tests of the client library (tools/client/) against a scripted in-process fake broker:
// version negotiation (highest common version, per api), frame/correlation handling, timeouts,
// connection errors, error naming; plus the CLI's pure parsers (tools/cli/cli_common.h).
#include "tools/client/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "protocol/ext/lookup.pb.h"
#include "protocol/ext/prefix_lookup.pb.h"
#include "protocol/ext/scan.pb.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/headers.h"
#include "protocol/messages/metadata.h"
#include "tools/cli/cli_common.h"

namespace strata::client {
namespace {

// A one-connection fake broker. It advertises `versions` in ApiVersions, answers Metadata at the
// version it was asked (one broker: itself, one topic "t" with 2 partitions) and records every
// (api key, version) it saw. With `silent`, it reads requests and never answers. Lookup serves
// the first `lookup_serve` keys of each request (value "v:" + key) and marks the rest truncated,
// as a broker whose byte budget ran out does.
class FakeBroker {
 public:
  FakeBroker(std::vector<protocol::ApiVersionsResponse::ApiVersion> versions, bool silent = false)
      : versions_(std::move(versions)), silent_(silent) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(listen_fd_, 4), 0);
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeBroker() {
    stop_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    thread_.join();
    std::vector<std::thread> conns;
    {
      std::lock_guard<std::mutex> g(mu_);
      for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
      conns.swap(conn_threads_);
    }
    for (auto& t : conns) t.join();
    for (int fd : conn_fds_) ::close(fd);
  }
  int port() const { return port_; }
  std::atomic<int> lookup_serve{3};
  // Keys per Lookup request received, in order.
  std::vector<int> lookup_keys() {
    std::lock_guard<std::mutex> g(mu_);
    return lookup_keys_;
  }
  std::vector<std::pair<int16_t, int16_t>> seen() {
    std::lock_guard<std::mutex> g(mu_);
    return seen_;
  }

 private:
  static bool read_n(int fd, uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t k = ::recv(fd, p, n, 0);
      if (k <= 0) return false;
      p += k;
      n -= static_cast<size_t>(k);
    }
    return true;
  }
  // Accepts connections (the bootstrap one, then per-node ones) until the destructor runs.
  void serve() {
    for (;;) {
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> g(mu_);
      if (stop_) {
        ::close(fd);
        return;
      }
      conn_fds_.push_back(fd);
      conn_threads_.emplace_back([this, fd] { serve_conn(fd); });
    }
  }
  void serve_conn(int fd) {
    while (!stop_) {
      uint8_t sz[4];
      if (!read_n(fd, sz, 4)) return;
      const uint32_t n =
          (uint32_t{sz[0]} << 24) | (uint32_t{sz[1]} << 16) | (uint32_t{sz[2]} << 8) | sz[3];
      std::vector<uint8_t> body(n);
      if (!read_n(fd, body.data(), n)) return;
      const auto kv = protocol::peek_api_key_version(body.data(), body.size());
      {
        std::lock_guard<std::mutex> g(mu_);
        seen_.push_back({kv.api_key, kv.api_version});
      }
      if (silent_) continue;
      const bool ext = kv.api_key >= 16000;  // extension APIs: header v2 / v1, Protobuf bodies
      protocol::Reader r(body.data(), body.size());
      protocol::RequestHeader h;
      h.decode(r, ext ? 2 : protocol::request_header_version(kv.api_key, kv.api_version));
      protocol::Writer w;
      w.write_int32(0);
      protocol::ResponseHeader rh{h.correlation_id};
      rh.encode(w, ext ? 1 : protocol::response_header_version(kv.api_key, kv.api_version));
      if (kv.api_key == 16000) {
        ext::LookupRequest req;
        if (!req.ParseFromArray(r.current(), static_cast<int>(r.remaining()))) return;
        ext::LookupResponse resp;
        int served = 0, keys = 0;
        for (const auto& t : req.topics()) {
          auto* tr = resp.add_topics();
          tr->set_topic(t.topic());
          for (const auto& p : t.partitions()) {
            auto* pr = tr->add_partitions();
            pr->set_partition(p.partition());
            for (const auto& k : p.keys()) {
              ++keys;
              auto* row = pr->add_rows();
              if (served < lookup_serve) {
                ++served;
                row->set_found(true);
                row->set_value("v:" + k);
              } else {
                row->set_truncated(true);
                row->set_offset(-1);
                row->set_timestamp(-1);
              }
            }
          }
        }
        {
          std::lock_guard<std::mutex> g(mu_);
          lookup_keys_.push_back(keys);
        }
        std::string out;
        resp.SerializeToString(&out);
        const size_t at = w.size();
        w.buffer().resize(at + out.size());
        std::memcpy(w.buffer().data() + at, out.data(), out.size());
      } else if (kv.api_key == 16001 || kv.api_key == 16002) {
        // PrefixLookup / Scan that never progress: one row and always the same next cursor.
        std::string out;
        if (kv.api_key == 16002) {
          ext::ScanResponse resp;
          auto* row = resp.add_rows();
          row->set_key("k");
          row->set_value("v");
          resp.set_next_cursor("same");
          resp.SerializeToString(&out);
        } else {
          ext::PrefixLookupResponse resp;
          auto* row = resp.add_rows();
          row->set_key("k");
          row->set_value("v");
          resp.set_next_cursor("same");
          resp.SerializeToString(&out);
        }
        const size_t at = w.size();
        w.buffer().resize(at + out.size());
        std::memcpy(w.buffer().data() + at, out.data(), out.size());
      } else if (kv.api_key == 18) {
        protocol::ApiVersionsResponse resp;
        resp.api_keys = versions_;
        resp.encode(w, kv.api_version);
      } else if (kv.api_key == 3) {
        protocol::MetadataResponse resp;
        resp.brokers.push_back({7, "127.0.0.1", port_, std::nullopt});
        resp.cluster_id = "fake-cluster";
        resp.controller_id = 7;
        protocol::MetadataResponse::Topic t;
        t.name = "t";
        for (int32_t p = 1; p >= 0; --p) {
          protocol::MetadataResponse::Partition part;
          part.partition_index = p;
          part.leader_id = 7;
          t.partitions.push_back(part);
        }
        resp.topics.push_back(t);
        resp.encode(w, kv.api_version);
      } else {
        return;  // unexpected api: drop the connection
      }
      w.patch_int32(0, static_cast<int32_t>(w.size() - 4));
      if (::send(fd, w.buffer().data(), w.size(), MSG_NOSIGNAL) < 0) return;
    }
  }

  std::vector<protocol::ApiVersionsResponse::ApiVersion> versions_;
  bool silent_;
  int listen_fd_ = -1;
  std::vector<int> conn_fds_;              // guarded by mu_
  std::vector<std::thread> conn_threads_;  // guarded by mu_
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::pair<int16_t, int16_t>> seen_;
  std::vector<int> lookup_keys_;  // guarded by mu_
};

ClientOptions options_for(int port, int timeout_ms = 5000) {
  ClientOptions o;
  o.bootstrap = "127.0.0.1:" + std::to_string(port);
  o.request_timeout_ms = timeout_ms;
  return o;
}

TEST(ClientNegotiation, UsesHighestVersionBothSidesSpeak) {
  FakeBroker fb({{18, 0, 3}, {3, 1, 5}});
  Client c(options_for(fb.port()));
  auto md = c.metadata(std::nullopt);
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->cluster_id, "fake-cluster");
  ASSERT_EQ(md->topics.size(), 1u);
  ASSERT_EQ(md->topics[0].partitions.size(), 2u);
  EXPECT_EQ(md->topics[0].partitions[0].partition, 0);  // sorted
  const auto seen = fb.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::pair<int16_t, int16_t>{18, 3}));
  EXPECT_EQ(seen[1], (std::pair<int16_t, int16_t>{3, 5}));  // broker max 5 < ours (12)
}

TEST(ClientNegotiation, FlexibleVersionWhenBrokerOffersIt) {
  FakeBroker fb({{18, 0, 4}, {3, 0, 12}});
  Client c(options_for(fb.port()));
  auto t = c.topic("t");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->name, "t");
  EXPECT_EQ(fb.seen().back(), (std::pair<int16_t, int16_t>{3, 12}));
}

TEST(ClientNegotiation, MissingApiIsUnsupportedVersion) {
  FakeBroker fb({{18, 0, 3}});
  Client c(options_for(fb.port()));
  auto md = c.metadata(std::nullopt);
  ASSERT_FALSE(md.ok());
  EXPECT_EQ(error_name_of(md.status()), "UNSUPPORTED_VERSION");
  EXPECT_FALSE(is_connection_error(md.status()));
  auto tbl = c.describe_table("x");  // extension key 16004 not advertised either
  ASSERT_FALSE(tbl.ok());
  EXPECT_EQ(error_name_of(tbl.status()), "UNSUPPORTED_VERSION");
}

TEST(ClientErrors, TimeoutIsAConnectionError) {
  FakeBroker fb({}, /*silent=*/true);
  Client c(options_for(fb.port(), 300));
  const auto start = std::chrono::steady_clock::now();
  Status st = c.connect();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(is_connection_error(st));
  EXPECT_EQ(error_name_of(st), "CONNECTION");
  EXPECT_NE(st.message().find("timed out"), std::string::npos) << st.message();
  EXPECT_GE(ms, 250);
  EXPECT_LT(ms, 5000);
}

TEST(ClientErrors, RefusedIsAConnectionError) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  ::close(fd);  // nothing listens there now
  Client c(options_for(port));
  Status st = c.connect();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(is_connection_error(st));
  EXPECT_NE(st.message().find("refused"), std::string::npos) << st.message();
}

// A broker that keeps answering Scan / PrefixLookup with the cursor it was given must not make
// the client loop forever: the repeated cursor is an error naming the partition.
TEST(ClientErrors, RepeatedCursorIsNoProgress) {
  FakeBroker fb({{18, 0, 3}, {3, 1, 12}, {16001, 0, 0}, {16002, 0, 0}});
  Client c(options_for(fb.port()));
  TableInfo t;
  t.topic = "t";
  t.partition_count = 2;
  auto scan = c.scan(t);
  ASSERT_FALSE(scan.ok());
  EXPECT_NE(scan.status().message().find("no progress"), std::string::npos)
      << scan.status().to_string();
  EXPECT_FALSE(is_connection_error(scan.status()));
  auto pl = c.prefix_lookup(t, "k");
  ASSERT_FALSE(pl.ok());
  EXPECT_NE(pl.status().message().find("no progress"), std::string::npos)
      << pl.status().to_string();
  // Exactly two pages each: the first (no cursor) and the one that repeated the cursor.
  int scans = 0, lookups = 0;
  for (const auto& [key, version] : fb.seen()) {
    scans += key == 16002;
    lookups += key == 16001;
  }
  EXPECT_EQ(scans, 2);
  EXPECT_EQ(lookups, 2);
}

// A broker answer that stops at its byte budget marks the other keys truncated: the client asks
// for exactly those again, round after round, and returns every key in input order.
TEST(ClientTables, LookupReRequestsTruncatedKeys) {
  FakeBroker fb({{18, 0, 3}, {3, 1, 12}, {16000, 0, 0}});
  Client c(options_for(fb.port()));
  TableInfo t;
  t.topic = "t";
  t.partition_count = 2;
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back("key-" + std::to_string(i));
  keys.push_back("key-3");  // the same key twice is answered twice
  auto rows = c.lookup(t, keys);
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  ASSERT_EQ(rows->size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_TRUE((*rows)[i].found) << keys[i];
    EXPECT_EQ((*rows)[i].value, "v:" + keys[i]);
  }
  // 11 keys, 3 served per answer: 11, 8, 5, 2 keys asked.
  EXPECT_EQ(fb.lookup_keys(), (std::vector<int>{11, 8, 5, 2}));
}

// A broker that serves nothing at all must not make the client loop forever.
TEST(ClientTables, LookupWithNoProgressIsAnError) {
  FakeBroker fb({{18, 0, 3}, {3, 1, 12}, {16000, 0, 0}});
  fb.lookup_serve = 0;
  Client c(options_for(fb.port()));
  TableInfo t;
  t.topic = "t";
  t.partition_count = 2;
  std::vector<std::string> keys = {"a", "b"};
  auto rows = c.lookup(t, keys);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("no progress"), std::string::npos)
      << rows.status().to_string();
  EXPECT_EQ(fb.lookup_keys(), (std::vector<int>{2}));
}

// More keys than one request may hold (100,000) are split over several requests.
TEST(ClientTables, LookupSplitsAtTheBrokersKeyLimit) {
  FakeBroker fb({{18, 0, 3}, {3, 1, 12}, {16000, 0, 0}});
  fb.lookup_serve = 1 << 30;
  Client c(options_for(fb.port()));
  TableInfo t;
  t.topic = "t";
  t.partition_count = 2;
  std::vector<std::string> keys(150001);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = "k" + std::to_string(i);
  auto rows = c.lookup(t, keys);
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  EXPECT_EQ((*rows)[150000].value, "v:k150000");
  EXPECT_EQ(fb.lookup_keys(), (std::vector<int>{100000, 50001}));
}

TEST(ClientErrors, KafkaStatusNamesTheError) {
  Status s = kafka_status(3, "topic 'x'", "detail");
  EXPECT_EQ(s.message(), "UNKNOWN_TOPIC_OR_PARTITION: topic 'x': detail");
  EXPECT_EQ(s.code(), Errc::not_found);
  EXPECT_EQ(error_name_of(s), "UNKNOWN_TOPIC_OR_PARTITION");
  EXPECT_FALSE(is_connection_error(s));
  EXPECT_EQ(kafka_status(36, "t").code(), Errc::already_exists);
  Status odd = kafka_status(9999, "t");
  EXPECT_EQ(error_name_of(odd), "UNKNOWN_ERROR_CODE");
  EXPECT_NE(odd.message().find("9999"), std::string::npos);
}

TEST(ClientParse, HostPort) {
  auto a = parse_host_port("localhost:1234");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "localhost");
  EXPECT_EQ(a->second, 1234);
  auto b = parse_host_port("[::1]:9093");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "::1");
  EXPECT_EQ(b->second, 9093);
  auto c = parse_host_port("broker");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->second, 9092);
  EXPECT_FALSE(parse_host_port("h:0").ok());
  EXPECT_FALSE(parse_host_port("h:99999").ok());
  EXPECT_FALSE(parse_host_port("h:12x").ok());
  EXPECT_FALSE(parse_host_port(":1").ok());
  EXPECT_FALSE(parse_host_port("h:abc").ok());
  EXPECT_FALSE(parse_host_port("h: 12").ok());
  EXPECT_FALSE(parse_host_port("h:+12").ok());
  EXPECT_FALSE(parse_host_port("h:99999999999999999999").ok());
}

TEST(ClientParse, NodeIdIsStrict) {
  EXPECT_EQ(parse_node_id("0"), 0);
  EXPECT_EQ(parse_node_id("17"), 17);
  EXPECT_EQ(parse_node_id("2147483647"), 2147483647);
  for (const char* bad : {"", "1abc", "abc", "-1", "+1", " 1", "1 ", "2147483648", "1.0"}) {
    EXPECT_FALSE(parse_node_id(bad).has_value()) << bad;
  }
}

TEST(CliParse, Iso8601) {
  auto t = cli::parse_iso8601_ms("2024-01-02T03:04:05Z");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t, 1704164645000);
  EXPECT_EQ(*cli::parse_iso8601_ms("2024-01-02T03:04:05.250Z"), 1704164645250);
  EXPECT_EQ(*cli::parse_iso8601_ms("2024-01-02T05:04:05+02:00"), 1704164645000);
  EXPECT_EQ(*cli::parse_iso8601_ms("2024-01-02T03:04"), 1704164640000);
  EXPECT_EQ(*cli::parse_iso8601_ms("1970-01-01"), 0);
  EXPECT_FALSE(cli::parse_iso8601_ms("2024-13-01").ok());
  EXPECT_FALSE(cli::parse_iso8601_ms("yesterday").ok());
  EXPECT_FALSE(cli::parse_iso8601_ms("2024-01-02T03:04:05Zjunk").ok());
}

TEST(CliParse, KeyValues) {
  auto kv = cli::parse_kvs({"a=1", "b=x=y", "a=2"});
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->at("a"), "2");
  EXPECT_EQ(kv->at("b"), "x=y");
  EXPECT_FALSE(cli::parse_kvs({"novalue"}).ok());
  EXPECT_FALSE(cli::parse_kvs({"=v"}).ok());
}

}  // namespace
}  // namespace strata::client
