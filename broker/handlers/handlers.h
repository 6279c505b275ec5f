// One function per Kafka API; each lives in broker/handlers/<api>.cc. See broker/handler.h.
#pragma once

#include "broker/handler.h"

namespace strata::broker::handlers {

void api_versions(RequestContext& ctx, protocol::Reader& body);
void metadata(RequestContext& ctx, protocol::Reader& body);
void produce(RequestContext& ctx, protocol::Reader& body);
void fetch(RequestContext& ctx, protocol::Reader& body);
void list_offsets(RequestContext& ctx, protocol::Reader& body);
void create_topics(RequestContext& ctx, protocol::Reader& body);
void delete_topics(RequestContext& ctx, protocol::Reader& body);
void find_coordinator(RequestContext& ctx, protocol::Reader& body);

}  // namespace strata::broker::handlers
