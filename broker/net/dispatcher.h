// The seam between the network layer and request handling: a Connection hands every complete
// frame to a Dispatcher on the connection's strand; the Dispatcher must complete the Responder
// exactly once (now or later, from any thread). Implemented by broker/dispatch.h.
#pragma once

#include <memory>

#include "broker/net/connection.h"
#include "broker/net/frame.h"

namespace strata::broker {

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;
  virtual void dispatch(std::shared_ptr<RequestFrame> frame, Responder responder) = 0;
};

}  // namespace strata::broker
