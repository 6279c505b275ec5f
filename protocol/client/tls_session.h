// The client side of TLS over a connected non-blocking socket (OpenSSL's libssl), used by
// Connection for SSL and SASL_SSL listeners: verifies the broker's certificate chain against the
// configured CAs and its host name or IP address against the certificate, optionally presents a
// client certificate (mTLS), and moves bytes with deadlines like the plaintext path. One
// connection, one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "protocol/base/result.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace strata::client {

struct ClientSecurity;

class TlsSession {
 public:
  static Result<std::unique_ptr<TlsSession>> handshake(int fd, const std::string& host,
                                                       const ClientSecurity& security,
                                                       int64_t deadline_ms);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // Both fail with a message only (the caller words the connection error and closes).
  Status write_all(int fd, const uint8_t* data, size_t n, int64_t deadline_ms);
  Status read_all(int fd, uint8_t* data, size_t n, int64_t deadline_ms);

 private:
  TlsSession(SSL_CTX* ctx, SSL* ssl) : ctx_(ctx), ssl_(ssl) {}
  SSL_CTX* ctx_;
  SSL* ssl_;
};

// Waits until `fd` is ready for `events` (poll(2) flags) or the deadline passes: 1 ready,
// 0 timeout, -1 error. Shared with the plaintext path.
int wait_fd(int fd, short events, int64_t deadline_ms);
int64_t steady_now_ms();

}  // namespace strata::client
