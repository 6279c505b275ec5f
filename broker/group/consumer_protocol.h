// The parts of Kafka's consumer embedded protocol the coordinator reads: the topics of a
// ConsumerProtocolSubscription (JoinGroup member metadata of protocol type "consumer"), needed by
// OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC check. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::broker::group {

inline constexpr const char* kConsumerProtocolType = "consumer";

// Subscription layout (every version): int16 version, int32 topic count, then int16-length
// topic names; later fields are ignored. nullopt if the bytes do not parse.
std::optional<std::vector<std::string>> parse_subscription_topics(const std::vector<uint8_t>& md);

}  // namespace strata::broker::group
