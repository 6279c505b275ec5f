// TopicCounters: the per-topic request counters of the Prometheus metrics — bytes and
// records in, bytes out, primary-key lookups/keys/rows applied — as plain relaxed atomics. Each
// TopicEntry (broker/topics/topic_registry.h) owns one through a shared_ptr created with the entry
// and carried over when the registry replaces the entry (config change, new partitions), so a
// handler reaches its topic's counters through the entry it already holds, with no lookup and no
// lock, and the counters live as long as anyone holds the entry (a concurrent DeleteTopics cannot
// free them). Any thread may bump or read them; BrokerMetrics::collect() reads them at scrape time.
#pragma once

#include <atomic>
#include <cstdint>

namespace strata::broker::metrics {

struct TopicCounters {
  std::atomic<uint64_t> bytes_in{0};         // Produce: batch bytes appended
  std::atomic<uint64_t> records_in{0};       // Produce: records appended
  std::atomic<uint64_t> bytes_out{0};        // Fetch: record bytes sent
  std::atomic<uint64_t> pk_lookups{0};       // Lookup/PrefixLookup partition requests served
  std::atomic<uint64_t> pk_keys{0};          // keys looked up (PrefixLookup: rows returned)
  std::atomic<uint64_t> pk_rows_applied{0};  // changelog records applied to the PK state
};

}  // namespace strata::broker::metrics
