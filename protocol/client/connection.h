// Connection: one blocking TCP connection to one Strata/Kafka broker, speaking Kafka frames with
// the generated messages (protocol/messages/) and the extension APIs' Protobuf bodies
// (protocol/ext/, keys 16000-16099: request header v2, response header v1).
//
// open() connects (with a timeout) and negotiates versions with ApiVersions; every call then uses
// the highest version both sides speak (call<Req, Resp>() picks it from the request type's
// kMinVersion..kMaxVersion, optionally capped). One request is in flight at a time; each send and
// receive is bounded by a deadline (poll()). A connection that failed (timeout, closed, bad
// frame) is marked broken and refuses further calls. Used by the client library (tools/client/) and
// by brokers talking to each other;
// one thread at a time (not thread-safe).
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/base/result.h"
#include "protocol/client/client_error.h"
#include "protocol/messages/headers.h"
#include "protocol/wire/decode_error.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace strata::client {

// A decoded response plus the frame its bytes/records fields view (moving a Reply keeps the
// views valid: the vector's heap buffer moves with it).
template <typename Resp>
struct Reply {
  std::vector<uint8_t> frame;
  Resp msg;
  int16_t version = 0;
};

// How to reach a secured listener, with Kafka's client vocabulary (security.protocol,
// sasl.mechanism, ...): TLS verifies the broker's certificate against `ca_file` (or the system's
// CAs) and its host name or IP against the certificate's SAN; SASL runs SaslHandshake v1 +
// SaslAuthenticate with PLAIN or SCRAM right after ApiVersions.
struct ClientSecurity {
  std::string protocol = "PLAINTEXT";    // PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
  std::string ca_file;                   // PEM CA certificates; empty = the system's
  std::string cert_file;                 // PEM client certificate (mTLS), with key_file
  std::string key_file;                  // PEM private key (may hold the chain too)
  bool verify_hostname = true;           // ssl.endpoint.identification.algorithm=https
  std::string sasl_mechanism = "PLAIN";  // PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512
  std::string username;
  std::string password;

  bool tls() const { return protocol == "SSL" || protocol == "SASL_SSL"; }
  bool sasl() const { return protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL"; }
};

struct ConnectionOptions {
  std::string client_id = "strata-client";
  int connect_timeout_ms = 5000;
  int request_timeout_ms = 30000;
  ClientSecurity security;
};

class TlsSession;  // client_security.cc

class Connection {
 public:
  // Connects to host:port and runs ApiVersions. Errors are connection errors (CONNECTION: ...),
  // or the Kafka error of ApiVersions.
  static Result<std::unique_ptr<Connection>> open(const std::string& host, int port,
                                                  const ConnectionOptions& opts);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  const std::string& host() const { return host_; }
  int port() const { return port_; }
  bool broken() const { return fd_ < 0; }

  // The broker's advertised [min, max] for `api_key`, if any.
  bool supports(int16_t api_key) const { return versions_.count(api_key) != 0; }
  // Highest version in [our_min, our_max] ∩ the broker's range; UNSUPPORTED_VERSION otherwise.
  Result<int16_t> version_for(int16_t api_key, int16_t our_min, int16_t our_max) const;

  // Sends `req` at the negotiated version (capped at `max_version` when >= 0) and decodes the
  // response. `extra_timeout_ms` extends the deadline (long polls).
  template <typename Req, typename Resp>
  Result<Reply<Resp>> call(const Req& req, int16_t max_version = -1, int extra_timeout_ms = 0) {
    const int16_t hi =
        max_version >= 0 && max_version < Req::kMaxVersion ? max_version : Req::kMaxVersion;
    auto v = version_for(Req::kApiKey, Req::kMinVersion, hi);
    if (!v.ok()) return v.status();
    protocol::Writer w(256);
    const int32_t corr =
        begin_frame(w, Req::kApiKey, *v, protocol::request_header_version(Req::kApiKey, *v));
    req.encode(w, *v);
    auto frame =
        exchange(w, corr, protocol::response_header_version(Req::kApiKey, *v), extra_timeout_ms);
    if (!frame.ok()) return frame.status();
    Reply<Resp> out;
    out.version = *v;
    out.frame = std::move(frame->first);
    try {
      protocol::Reader r(out.frame.data() + frame->second, out.frame.size() - frame->second);
      out.msg.decode(r, *v);
    } catch (const protocol::DecodeError& e) {
      close();
      return connection_status("undecodable response to api " + std::to_string(Req::kApiKey) +
                               ": " + e.what());
    }
    return out;
  }

  // An extension API call (version 0): `req` serialised as the body, `resp` parsed from the
  // response body. UNSUPPORTED_VERSION when the broker does not advertise `api_key`.
  Status call_ext(int16_t api_key, const google::protobuf::MessageLite& req,
                  google::protobuf::MessageLite& resp, int extra_timeout_ms = 0);

  void close();

 private:
  Connection(int fd, std::string host, int port, ConnectionOptions opts);
  Status negotiate();
  Status authenticate();  // SASL, after negotiate()
  // Writes the size placeholder and request header; returns the correlation id.
  int32_t begin_frame(protocol::Writer& w, int16_t api_key, int16_t version,
                      int16_t header_version);
  // Patches the size, sends, receives the response frame; returns (frame, body start) after
  // checking the correlation id and skipping the response header.
  Result<std::pair<std::vector<uint8_t>, size_t>> exchange(protocol::Writer& w, int32_t corr,
                                                           int16_t resp_header_version,
                                                           int extra_timeout_ms);
  Status send_all(const uint8_t* data, size_t n, int64_t deadline_ms);
  Status recv_all(uint8_t* data, size_t n, int64_t deadline_ms);

  int fd_ = -1;
  std::unique_ptr<TlsSession> tls_;  // SSL / SASL_SSL
  std::string host_;
  int port_ = 0;
  ConnectionOptions opts_;
  int32_t next_corr_ = 1;
  std::map<int16_t, std::pair<int16_t, int16_t>> versions_;
};

// Splits "host:port" (IPv6 as "[::1]:9092"); a missing port gives 9092.
Result<std::pair<std::string, int>> parse_host_port(const std::string& s);
// A broker (node) id: decimal digits only, the whole string, in int32 range ("1abc", "+1", " 1",
// "-1" give nullopt).
std::optional<int32_t> parse_node_id(const std::string& s);

}  // namespace strata::client
