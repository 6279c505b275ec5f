// The per-topic/per-partition response loop that many Kafka APIs share: the response mirrors the
// request's topics and partitions in order, each entry named like its request entry. The generated
// structs spell the names differently per API (name/topic, partitions/partition_responses,
// partition_index/partition/index); the accessors below pick whichever the struct has.
// Header only; runs on the calling handler's strand.
#pragma once

#include <utility>

#include "broker/topics/topic_registry.h"
#include "protocol/wire/errors.h"

namespace strata::broker::handlers {

namespace partition_loop_detail {

template <typename T>
auto& topic_name(T& t) {
  if constexpr (requires { t.name; }) {
    return t.name;
  } else {
    return t.topic;
  }
}

template <typename T>
auto& partitions_of(T& t) {
  if constexpr (requires { t.partitions; }) {
    return t.partitions;
  } else {
    return t.partition_responses;
  }
}

template <typename T>
auto& partition_id(T& p) {
  if constexpr (requires { p.partition_index; }) {
    return p.partition_index;
  } else if constexpr (requires { p.partition; }) {
    return p.partition;
  } else {
    return p.index;
  }
}

}  // namespace partition_loop_detail

// For every requested topic and partition, appends the matching response topic/partition (named
// and numbered as requested, other fields copied from `blank`) and calls
// fill(request_topic, request_partition, response_partition).
template <typename ReqTopics, typename RespTopics, typename RespPartition, typename Fill>
void mirror_partitions(const ReqTopics& req_topics, RespTopics& resp_topics,
                       const RespPartition& blank, Fill&& fill) {
  using namespace partition_loop_detail;
  for (const auto& rt : req_topics) {
    auto& tout = resp_topics.emplace_back();
    topic_name(tout) = topic_name(rt);
    for (const auto& rp : partitions_of(rt)) {
      auto& pout = partitions_of(tout).emplace_back(blank);
      partition_id(pout) = partition_id(rp);
      fill(rt, rp, pout);
    }
  }
}

// mirror_partitions for APIs that act on existing partition logs: a topic `allowed(name)` refuses
// is answered TOPIC_AUTHORIZATION_FAILED for every partition without being looked up (its
// existence is not disclosed); a partition whose topic or log does not exist is answered
// UNKNOWN_TOPIC_OR_PARTITION (the rest of its entry as in `blank`); otherwise its error code is
// what
//   fill(request_topic, request_partition, response_partition, storage::PartitionLog&)
// returns (ErrorCode::none on success).
template <typename ReqTopics, typename RespTopics, typename RespPartition, typename Allowed,
          typename Fill>
void answer_partitions(const TopicRegistry& topics, const ReqTopics& req_topics,
                       RespTopics& resp_topics, const RespPartition& blank, Allowed&& allowed,
                       Fill&& fill) {
  using namespace partition_loop_detail;
  for (const auto& rt : req_topics) {
    const bool ok = allowed(topic_name(rt));
    auto topic = ok ? topics.find(topic_name(rt)) : nullptr;
    auto& tout = resp_topics.emplace_back();
    topic_name(tout) = topic_name(rt);
    for (const auto& rp : partitions_of(rt)) {
      auto& pout = partitions_of(tout).emplace_back(blank);
      partition_id(pout) = partition_id(rp);
      storage::PartitionLog* log = topic ? topic->partition(partition_id(rp)) : nullptr;
      pout.error_code = !ok   ? protocol::ErrorCode::topic_authorization_failed
                        : log ? fill(rt, rp, pout, *log)
                              : protocol::ErrorCode::unknown_topic_or_partition;
    }
  }
}

}  // namespace strata::broker::handlers
