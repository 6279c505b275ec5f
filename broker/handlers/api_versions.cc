// ApiVersions (18): the advertised versions are exactly the handler table (broker/dispatch.cc).
#include "protocol/messages/api_versions.h"

#include "broker/dispatch.h"
#include "broker/handlers/handlers.h"

namespace strata::broker::handlers {

void api_versions(RequestContext& ctx, protocol::Reader& body) {
  protocol::ApiVersionsRequest req;
  req.decode(body, ctx.version);
  protocol::ApiVersionsResponse resp;
  for (const auto& h : handler_table()) {
    auto& k = resp.api_keys.emplace_back();
    k.api_key = h.api_key;
    k.min_version = h.min_version;
    k.max_version = h.max_version;
  }
  ctx.respond(resp);
}

}  // namespace strata::broker::handlers
