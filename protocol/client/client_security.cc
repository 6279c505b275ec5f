// TLS (TlsSession) and SASL (Connection::authenticate) of the client side. See tls_session.h and
// ClientSecurity in connection.h.
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "protocol/client/connection.h"
#include "protocol/client/tls_session.h"
#include "protocol/messages/sasl_authenticate.h"
#include "protocol/messages/sasl_handshake.h"
#include "protocol/sasl/scram.h"

namespace strata::client {

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int wait_fd(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    const int64_t left = deadline_ms - steady_now_ms();
    if (left <= 0) return 0;
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left > 1000000 ? 1000000 : left));
    if (rc > 0) return 1;
    if (rc == 0) continue;
    if (errno == EINTR) continue;
    return -1;
  }
}

namespace {

std::string ssl_error_text() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return errno != 0 ? std::strerror(errno) : "connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// Runs one SSL_* call to completion, polling for what it wants. rc > 0 done; 0 closed.
template <typename Fn>
Result<int> drive(SSL* ssl, int fd, int64_t deadline_ms, Fn&& fn, const char* what) {
  for (;;) {
    ERR_clear_error();
    errno = 0;
    const int rc = fn();
    if (rc > 0) return rc;
    const int err = SSL_get_error(ssl, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      const int w = wait_fd(fd, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ms);
      if (w == 1) continue;
      return Status(Errc::io_error,
                    std::string("TLS ") + what + (w == 0 ? " timed out" : " failed"));
    }
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0) return 0;  // EOF
    return Status(Errc::io_error, std::string("TLS ") + what + ": " + ssl_error_text());
  }
}

}  // namespace

Result<std::unique_ptr<TlsSession>> TlsSession::handshake(int fd, const std::string& host,
                                                          const ClientSecurity& sec,
                                                          int64_t deadline_ms) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return Status(Errc::io_error, "TLS: " + ssl_error_text());
  std::unique_ptr<TlsSession> s(new TlsSession(ctx, nullptr));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  const int ca_ok = sec.ca_file.empty()
                        ? SSL_CTX_set_default_verify_paths(ctx)
                        : SSL_CTX_load_verify_locations(ctx, sec.ca_file.c_str(), nullptr);
  if (ca_ok != 1) {
    return Status(Errc::invalid_argument, "TLS CA file " + sec.ca_file + ": " + ssl_error_text());
  }
  if (!sec.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, sec.cert_file.c_str()) != 1) {
      return Status(Errc::invalid_argument,
                    "TLS certificate " + sec.cert_file + ": " + ssl_error_text());
    }
    const std::string& key = sec.key_file.empty() ? sec.cert_file : sec.key_file;
    if (SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) {
      return Status(Errc::invalid_argument, "TLS key " + key + ": " + ssl_error_text());
    }
  }
  s->ssl_ = SSL_new(ctx);
  if (!s->ssl_) return Status(Errc::io_error, "TLS: " + ssl_error_text());
  SSL_set_fd(s->ssl_, fd);
  in6_addr ip6;
  in_addr ip4;
  const bool is_ip =
      inet_pton(AF_INET, host.c_str(), &ip4) == 1 || inet_pton(AF_INET6, host.c_str(), &ip6) == 1;
  if (sec.verify_hostname) {
    X509_VERIFY_PARAM* param = SSL_get0_param(s->ssl_);
    const int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                         : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    if (ok != 1) return Status(Errc::invalid_argument, "TLS: bad host name " + host);
  }
  if (!is_ip) SSL_set_tlsext_host_name(s->ssl_, host.c_str());  // SNI
  SSL* ssl = s->ssl_;
  auto r = drive(
      ssl, fd, deadline_ms, [ssl] { return SSL_connect(ssl); }, "handshake");
  if (!r.ok()) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      return Status(Errc::io_error, std::string("TLS handshake: broker certificate refused: ") +
                                        X509_verify_cert_error_string(verify));
    }
    return r.status();
  }
  if (*r == 0) return Status(Errc::io_error, "TLS handshake: the broker closed the connection");
  return s;
}

TlsSession::~TlsSession() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
}

Status TlsSession::write_all(int fd, const uint8_t* data, size_t n, int64_t deadline_ms) {
  size_t done = 0;
  while (done < n) {
    SSL* ssl = ssl_;
    const int chunk = static_cast<int>(std::min<size_t>(n - done, 1 << 20));
    const uint8_t* p = data + done;
    auto r = drive(
        ssl, fd, deadline_ms, [ssl, p, chunk] { return SSL_write(ssl, p, chunk); }, "send");
    if (!r.ok()) return r.status();
    if (*r == 0) return Status(Errc::io_error, "the broker closed the connection");
    done += static_cast<size_t>(*r);
  }
  return Status::Ok();
}

Status TlsSession::read_all(int fd, uint8_t* data, size_t n, int64_t deadline_ms) {
  size_t done = 0;
  while (done < n) {
    SSL* ssl = ssl_;
    const int chunk = static_cast<int>(std::min<size_t>(n - done, 1 << 20));
    uint8_t* p = data + done;
    auto r = drive(
        ssl, fd, deadline_ms, [ssl, p, chunk] { return SSL_read(ssl, p, chunk); }, "receive");
    if (!r.ok()) return r.status();
    if (*r == 0) return Status(Errc::io_error, "the broker closed the connection");
    done += static_cast<size_t>(*r);
  }
  return Status::Ok();
}

// SaslHandshake v1 + SaslAuthenticate: PLAIN in one token, SCRAM in two (the server's final
// message is checked, so a broker that does not know the credential is not trusted either).
Status Connection::authenticate() {
  const ClientSecurity& sec = opts_.security;
  protocol::SaslHandshakeRequest hs;
  hs.mechanism = sec.sasl_mechanism;
  auto h = call<protocol::SaslHandshakeRequest, protocol::SaslHandshakeResponse>(hs, 1);
  if (!h.ok()) return h.status();
  if (h->msg.error_code != protocol::ErrorCode::none) {
    std::string offered;
    for (const auto& m : h->msg.mechanisms) offered += (offered.empty() ? "" : ", ") + m;
    return kafka_status(h->msg.error_code, "SASL mechanism " + sec.sasl_mechanism +
                                               " (the broker offers: " + offered + ")");
  }
  auto step = [this](const std::string& token) -> Result<std::string> {
    protocol::SaslAuthenticateRequest req;
    req.auth_bytes =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(token.data()), token.size());
    auto r = call<protocol::SaslAuthenticateRequest, protocol::SaslAuthenticateResponse>(req);
    if (!r.ok()) return r.status();
    if (r->msg.error_code != protocol::ErrorCode::none) {
      return kafka_status(r->msg.error_code, r->msg.error_message.value_or("SASL authentication"));
    }
    return std::string(reinterpret_cast<const char*>(r->msg.auth_bytes.data()),
                       r->msg.auth_bytes.size());
  };
  if (sec.sasl_mechanism == "PLAIN") {
    std::string token;
    token.push_back('\0');
    token += sec.username;
    token.push_back('\0');
    token += sec.password;
    auto r = step(token);
    return r.ok() ? Status::Ok() : r.status();
  }
  auto m = protocol::sasl::scram_mechanism(sec.sasl_mechanism);
  if (!m) {
    return Status(Errc::invalid_argument, "unsupported SASL mechanism " + sec.sasl_mechanism);
  }
  protocol::sasl::ScramClient client(*m, sec.username, sec.password);
  auto server_first = step(client.first());
  if (!server_first.ok()) return server_first.status();
  auto final_msg = client.final(*server_first);
  if (!final_msg.ok()) return final_msg.status();
  auto server_final = step(*final_msg);
  if (!server_final.ok()) return server_final.status();
  return client.verify(*server_final);
}

}  // namespace strata::client
