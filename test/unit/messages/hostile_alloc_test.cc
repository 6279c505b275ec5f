// Checks that hostile lengths are rejected before anything is allocated: this binary replaces
// global operator new to record the largest single allocation made while decoding.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "protocol/messages/messages.h"

namespace {
std::atomic<size_t> g_largest_allocation{0};
}  // namespace

void* operator new(size_t n) {
  size_t prev = g_largest_allocation.load(std::memory_order_relaxed);
  while (n > prev && !g_largest_allocation.compare_exchange_weak(prev, n)) {
  }
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace strata::protocol {
namespace {

template <typename T>
size_t largest_allocation_decoding(const std::vector<uint8_t>& b, int16_t version) {
  T msg;
  g_largest_allocation = 0;
  Reader r(b.data(), b.size());
  EXPECT_THROW(msg.decode(r, version), DecodeError);
  return g_largest_allocation.load();
}

TEST(HostileInput, HugeCountsAndLengthsAllocateNothingLarge) {
  constexpr size_t kLimit = 4096;
  // Metadata v1 request claiming 2^31-1 topics.
  EXPECT_LT(largest_allocation_decoding<MetadataRequest>({0x7f, 0xff, 0xff, 0xff, 0, 1, 'a'}, 1),
            kLimit);
  // Metadata v9 (compact) request claiming 2^32-2 topics.
  EXPECT_LT(largest_allocation_decoding<MetadataRequest>({0xff, 0xff, 0xff, 0xff, 0x0f, 0x02}, 9),
            kLimit);
  // CreateTopics v2: one topic with a 32767-byte name in a 10-byte input.
  EXPECT_LT(largest_allocation_decoding<CreateTopicsRequest>(
                {0, 0, 0, 1, 0x7f, 0xff, 'a', 'b', 'c', 'd'}, 2),
            kLimit);
  // Produce v9: compact transactional id of 2^31 bytes.
  EXPECT_LT(largest_allocation_decoding<ProduceRequest>({0x80, 0x80, 0x80, 0x80, 0x08, 0}, 9),
            kLimit);
  // Fetch v12: a tagged-field section claiming 2^31 fields each of huge size.
  std::vector<uint8_t> fetch = {
      0xff, 0xff, 0xff, 0xff,                          // replica_id
      0,    0,    0,    0,    0,    0,    0,    1,     // max_wait_ms, min_bytes
      0,    0,    0,    1,    0,                       // max_bytes, isolation_level
      0,    0,    0,    0,    0xff, 0xff, 0xff, 0xff,  // session_id, session_epoch
      1,    1,    1,                                   // no topics, no forgotten topics, rack ""
      0x80, 0x80, 0x80, 0x80, 0x08,                    // 2^31 tagged fields
  };
  EXPECT_LT(largest_allocation_decoding<FetchRequest>(fetch, 12), kLimit);
}

}  // namespace
}  // namespace strata::protocol
