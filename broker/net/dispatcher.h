// The seam between the network layer and request handling: a Connection hands every complete
// frame to a Dispatcher on the connection's strand; the Dispatcher must complete the Responder
// exactly once (now or later, from any thread). Implemented by broker/dispatch.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "broker/net/connection.h"
#include "broker/net/frame.h"

namespace strata::broker {

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  virtual void dispatch(std::shared_ptr<RequestFrame> frame, Responder responder) = 0;
  // Observability hooks, called on the connection's strand: a request's
  // response became ready (or was skipped, acks=0) `elapsed` after its frame arrived; a connection
  // was accepted / closed (once each).
  virtual void request_completed(int16_t /*api_key*/,
                                 std::chrono::steady_clock::duration /*elapsed*/) {}
  virtual void connection_opened() {}
  virtual void connection_closed() {}
};

}  // namespace strata::broker
