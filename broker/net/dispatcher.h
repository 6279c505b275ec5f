// The seam between the network layer and request handling: a Connection hands every complete
// frame to a Dispatcher on the connection's strand; the Dispatcher must complete the Responder
// exactly once (now or later, from any thread). Implemented by broker/dispatch.h.
//
// A request whose handler may block (waits on etcd, fsyncs a small file) may be run on another
// thread so the connection's I/O thread keeps serving its other connections: dispatch() then
// returns false, and the connection dispatches none of its later frames until
// Responder::handler_returned() (requests are still handled in order, one at a time, as Kafka
// does; the Session is not touched on the strand meanwhile).
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
  // true: handled on the strand (answered or answering later); false: handed to another thread.
  virtual bool dispatch(std::shared_ptr<RequestFrame> frame, Responder responder) = 0;
  // Observability hooks, called on the connection's strand: a request's
  // response became ready (or was skipped, acks=0) `elapsed` after its frame arrived; a connection
  // was accepted / closed (once each).
  virtual void request_completed(int16_t /*api_key*/,
                                 std::chrono::steady_clock::duration /*elapsed*/) {}
  virtual void connection_opened() {}
  virtual void connection_closed() {}
};

}  // namespace strata::broker
