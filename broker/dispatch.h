// RequestDispatcher: routes each frame to its handler by (api key, version). Unknown keys and
// unadvertised versions close the connection, as a Java broker does — except ApiVersions above our
// range, which gets UNSUPPORTED_VERSION with a v0 body listing key 18 so the client can retry.
// Stateless apart from the Broker reference; called on connection strands (many threads).
#pragma once

#include <vector>

#include "broker/handler.h"
#include "broker/net/asio.h"
#include "broker/net/dispatcher.h"

namespace strata::broker {

// Every implemented API, sorted by key. ApiVersions is derived from this list.
const std::vector<HandlerDef>& handler_table();

class RequestDispatcher : public Dispatcher {
 public:
  // `blocking`: where may_block handlers run (null: on the strand like the others).
  explicit RequestDispatcher(Services& svc, boost::asio::thread_pool* blocking = nullptr)
      : svc_(svc), blocking_(blocking) {}
  bool dispatch(std::shared_ptr<RequestFrame> frame, Responder responder) override;
  // metrics hooks (broker/metrics/broker_metrics.h).
  void request_completed(int16_t api_key, std::chrono::steady_clock::duration elapsed) override;
  void connection_opened() override;
  void connection_closed() override;

 private:
  bool admit(const RequestFrame& frame, const Responder& responder);
  // Runs the handler; false when it asked to run again on the blocking pool
  // (RequestContext::run_again_blocking) and has not answered. `may_block`: on the pool, or no
  // pool at all.
  bool run(const HandlerDef& h, const std::shared_ptr<RequestFrame>& frame,
           const Responder& responder, bool may_block);
  // Runs it on the blocking pool; its connection waits for Responder::handler_returned().
  void run_on_pool(const HandlerDef& h, std::shared_ptr<RequestFrame> frame, Responder responder);
  Services& svc_;
  boost::asio::thread_pool* const blocking_;
};

}  // namespace strata::broker
