// libFuzzer target: one request frame body (the bytes after the size prefix) as the broker's
// dispatcher sees it — header v1/v2 then the body of any request Strata advertises, every
// version. Decoding must either succeed or throw DecodeError: no crash, no sanitizer report, no
// unbounded allocation. Successfully decoded requests are re-encoded and re-decoded.
#include <cstddef>
#include <cstdint>

#include "protocol/messages/headers.h"
#include "protocol/messages/messages.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace p = strata::protocol;

namespace {

template <typename Req>
void round_trip(p::Reader& r, int16_t version) {
  Req req;
  req.decode(r, version);
  p::Writer w;
  req.encode(w, version);
  if (w.total_size() != req.size(version)) __builtin_trap();
  auto bytes = p::flatten(w);
  p::Reader again(bytes.data(), bytes.size());
  Req copy;
  copy.decode(again, version);
}

template <typename... Reqs>
bool decode_any(int16_t key, int16_t version, p::Reader& r) {
  bool matched = false;
  ((key == Reqs::kApiKey && version >= Reqs::kMinVersion && version <= Reqs::kMaxVersion
        ? (round_trip<Reqs>(r, version), matched = true)
        : false),
   ...);
  return matched;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  int16_t key = static_cast<int16_t>((data[0] << 8) | data[1]);
  int16_t version = static_cast<int16_t>((data[2] << 8) | data[3]);
  try {
    p::Reader r(data, size);
    p::RequestHeader h;
    h.decode(r, p::request_header_version(key, version));
    // Every request with a schema (a superset of what the broker advertises).
    decode_any<p::ProduceRequest, p::FetchRequest, p::ListOffsetsRequest, p::MetadataRequest,
               p::OffsetCommitRequest, p::OffsetFetchRequest, p::FindCoordinatorRequest,
               p::JoinGroupRequest, p::HeartbeatRequest, p::LeaveGroupRequest, p::SyncGroupRequest,
               p::DescribeGroupsRequest, p::ListGroupsRequest, p::ApiVersionsRequest,
               p::CreateTopicsRequest, p::DeleteTopicsRequest, p::DeleteRecordsRequest,
               p::InitProducerIdRequest, p::OffsetForLeaderEpochRequest, p::DescribeConfigsRequest,
               p::AlterConfigsRequest, p::CreatePartitionsRequest, p::DeleteGroupsRequest,
               p::IncrementalAlterConfigsRequest, p::OffsetDeleteRequest,
               p::DescribeClusterRequest>(key, version, r);
  } catch (const p::DecodeError&) {
  }
  return 0;
}
