// TlsReloader: the context slots of this broker's TLS listeners, and their replacement when an
// AlterConfigs changes (or names again) a listener's key or trust store keys
// (listener.name.<l>.ssl.keystore.* / ssl.key.password / ssl.truststore.*), as Kafka's dynamic
// listener SSL update does. A reload is checked before anything is stored: the new material
// must load, and unless ssl.allow.dn.changes / ssl.allow.san.changes say otherwise the new
// certificate keeps the subject and subject alternative names of the one it replaces (KIP-978).
// Connections keep the context their handshake started with; new ones get the new context.
//
// Filled by Broker before the listeners accept; prepare()/commit() from any handler thread
// (config alterations are serialised by the caller).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "broker/config/config.h"
#include "broker/net/listener_security.h"
#include "protocol/base/result.h"

namespace strata::broker::security {

class TlsReloader {
 public:
  void add(const std::string& listener, std::shared_ptr<TlsContextSlot> slot);

  struct Plan {
    std::vector<std::string> listeners;  // names as configured
    std::vector<
        std::pair<std::shared_ptr<TlsContextSlot>, std::shared_ptr<boost::asio::ssl::context>>>
        swaps;
  };
  // The listeners whose reloadable keys differ between `current` and `next`, or that
  // `named_keys` (the keys an alteration names) touch, with their contexts built from `next`.
  // Errc::invalid_argument (INVALID_CONFIG) naming the listener and key when a listener is not a
  // TLS listener of this broker, its material does not load, or the certificate's identity
  // changes where that is not allowed.
  Result<Plan> prepare(const BrokerConfig& current, const BrokerConfig& next,
                       const std::vector<std::string>& named_keys) const;
  // Installs the plan's contexts (after the configuration that produced them is stored).
  static void commit(const Plan& plan);

 private:
  std::map<std::string, std::pair<std::string, std::shared_ptr<TlsContextSlot>>>
      slots_;  // lower-case name → (name, slot)
};

}  // namespace strata::broker::security
