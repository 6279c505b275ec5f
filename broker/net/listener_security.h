// What a connection needs to know of the listener it was accepted on: the listener's name and
// security protocol, the TLS context of a TLS listener, and how an mTLS client certificate
// becomes a principal. Built by the broker from the config (broker/security/tls_context.h);
// the network layer only uses it. The TLS context can be swapped while connections run
// (certificate reload): each connection keeps the context it started its handshake with.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "broker/config/config.h"
#include "protocol/base/result.h"

// Forward-declared: this header is included by every handler (through connection.h), and
// Boost.Asio's SSL headers are expensive to compile.
namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace strata::broker {

class TlsContextSlot {
 public:
  explicit TlsContextSlot(std::shared_ptr<boost::asio::ssl::context> ctx) : ctx_(std::move(ctx)) {}
  std::shared_ptr<boost::asio::ssl::context> get() const {
    std::lock_guard lk(mu_);
    return ctx_;
  }
  void set(std::shared_ptr<boost::asio::ssl::context> ctx) {
    std::lock_guard lk(mu_);
    ctx_ = std::move(ctx);
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;
};

struct ListenerSecurity {
  std::string name;
  SecurityProtocol protocol = SecurityProtocol::plaintext;
  std::shared_ptr<TlsContextSlot> tls;  // TLS listeners only
  // TLS listeners: the principal of a client that presented a certificate (its RFC 2253
  // subject in); an error refuses the connection. Unset: the subject is not used.
  std::function<Result<std::string>(const std::string& subject)> principal_of_subject;
};

}  // namespace strata::broker
