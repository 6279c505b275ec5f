// The JSON shape of etcd v3's gRPC gateway (`/v3/kv/*`, `/v3/lease/*`, `/v3/watch`), as etcd 3.4
// speaks it: keys and values are base64, int64 fields are decimal strings, fields at their default
// value are omitted (a missing `TTL` in a keep-alive answer means the lease is gone; a missing
// event `type` is PUT). Pure functions; any thread. Transport is in etcd_client.cc.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "broker/cluster/coordination.h"
#include "protocol/base/base64.h"

namespace strata::broker::cluster::etcd_json {

using json = nlohmann::json;

using strata::base64_decode;  // protocol/base/base64.h
using strata::base64_encode;

// An int64 field: a decimal string, a JSON number, or absent (0).
int64_t int_field(const json& j, const char* name);

json range_request(const std::string& key, const std::string& range_end);
json put_request(const std::string& key, const std::string& value, int64_t lease);
json delete_request(const std::string& key, const std::string& range_end);
json txn_request(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                 const std::vector<TxnOp>& failure);
json watch_create_request(const std::string& key, const std::string& range_end,
                          int64_t start_revision);

// The store revision of an answer's header.
int64_t header_revision(const json& answer);
Result<KeyValue> decode_kv(const json& kv);
Result<RangeResult> decode_range(const json& answer);
Result<TxnResult> decode_txn(const json& answer);

// An error answer ({"error": ..., "code": N}) as a Status, or Ok when the answer is not an error.
// gRPC codes: NOT_FOUND (5) → not_found (an unknown or expired lease), OUT_OF_RANGE (11) →
// out_of_range (a compacted revision), INVALID_ARGUMENT (3) → invalid_argument, anything else
// io_error.
Status error_of(const json& answer);
// etcd answered but cannot serve now (gRPC UNAVAILABLE, 14: no leader, leader changed, stopping):
// the request was not applied and another member may serve it.
bool is_unavailable(const json& answer);

// One message of the watch stream ({"result": {...}}).
struct WatchMessage {
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;
  int64_t revision = 0;  // header revision
  std::vector<WatchEvent> events;
  std::string cancel_reason;
};
Result<WatchMessage> decode_watch_message(const json& message);

// Splits a byte stream of concatenated JSON objects (the watch stream's framing: one object per
// message, newline-separated) into complete objects, keeping an incomplete tail in `pending`.
class ObjectSplitter {
 public:
  // Appends bytes; returns the complete top-level objects now available, in order.
  std::vector<std::string> feed(std::string_view bytes);
  size_t pending_bytes() const { return pending_.size(); }
  // An object larger than this is not a watch message: the stream is broken (or hostile).
  static constexpr size_t kMaxObjectBytes = 64u << 20;
  bool overflowed() const { return pending_.size() > kMaxObjectBytes; }

 private:
  std::string pending_;
  size_t scanned_ = 0;  // bytes of pending_ already scanned
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
  size_t start_ = 0;  // start of the current object in pending_
};

}  // namespace strata::broker::cluster::etcd_json
