#include "broker/cluster/etcd_json.h"

#include <charconv>

#include "protocol/base/base64.h"

namespace strata::broker::cluster {

namespace etcd_json {

int64_t int_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return 0;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_string()) {
    const auto& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) return v;
  }
  return 0;
}

namespace {

const char* target_name(Compare::Target t) {
  switch (t) {
    case Compare::Target::version:
      return "VERSION";
    case Compare::Target::create_revision:
      return "CREATE";
    case Compare::Target::mod_revision:
      return "MOD";
    case Compare::Target::value:
      return "VALUE";
    case Compare::Target::lease:
      return "LEASE";
  }
  return "MOD";
}

const char* op_name(Compare::Op op) {
  switch (op) {
    case Compare::Op::equal:
      return "EQUAL";
    case Compare::Op::not_equal:
      return "NOT_EQUAL";
    case Compare::Op::greater:
      return "GREATER";
    case Compare::Op::less:
      return "LESS";
  }
  return "EQUAL";
}

json compare_json(const Compare& c) {
  json j = {
      {"result", op_name(c.op)}, {"target", target_name(c.target)}, {"key", base64_encode(c.key)}};
  const std::string n = std::to_string(c.number);
  switch (c.target) {
    case Compare::Target::version:
      j["version"] = n;
      break;
    case Compare::Target::create_revision:
      j["create_revision"] = n;
      break;
    case Compare::Target::mod_revision:
      j["mod_revision"] = n;
      break;
    case Compare::Target::value:
      j["value"] = base64_encode(c.value);
      break;
    case Compare::Target::lease:
      j["lease"] = n;
      break;
  }
  return j;
}

json op_json(const TxnOp& op) {
  switch (op.kind) {
    case TxnOp::Kind::put:
      return {{"request_put", put_request(op.key, op.value, op.lease)}};
    case TxnOp::Kind::delete_range:
      return {{"request_delete_range", delete_request(op.key, op.range_end)}};
    case TxnOp::Kind::range:
      return {{"request_range", range_request(op.key, op.range_end)}};
  }
  return {};
}

}  // namespace

json range_request(const std::string& key, const std::string& range_end) {
  json j = {{"key", base64_encode(key)}};
  if (!range_end.empty()) j["range_end"] = base64_encode(range_end);
  return j;
}

json put_request(const std::string& key, const std::string& value, int64_t lease) {
  json j = {{"key", base64_encode(key)}, {"value", base64_encode(value)}};
  if (lease != 0) j["lease"] = std::to_string(lease);
  return j;
}

json delete_request(const std::string& key, const std::string& range_end) {
  return range_request(key, range_end);
}

json txn_request(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                 const std::vector<TxnOp>& failure) {
  json c = json::array(), s = json::array(), f = json::array();
  for (const auto& x : compares) c.push_back(compare_json(x));
  for (const auto& x : success) s.push_back(op_json(x));
  for (const auto& x : failure) f.push_back(op_json(x));
  return {{"compare", c}, {"success", s}, {"failure", f}};
}

json watch_create_request(const std::string& key, const std::string& range_end,
                          int64_t start_revision) {
  json req = range_request(key, range_end);
  if (start_revision > 0) req["start_revision"] = std::to_string(start_revision);
  return {{"create_request", req}};
}

int64_t header_revision(const json& answer) {
  auto h = answer.find("header");
  return h == answer.end() || !h->is_object() ? 0 : int_field(*h, "revision");
}

namespace {
Result<std::string> bytes_field(const json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end()) return std::string();
  if (!it->is_string())
    return Status(Errc::corruption, std::string("etcd: ") + name + " not a string");
  return base64_decode(it->get_ref<const std::string&>());
}
}  // namespace

Result<KeyValue> decode_kv(const json& kv) {
  if (!kv.is_object()) return Status(Errc::corruption, "etcd: kv is not an object");
  KeyValue out;
  auto key = bytes_field(kv, "key");
  if (!key.ok()) return key.status();
  auto value = bytes_field(kv, "value");
  if (!value.ok()) return value.status();
  out.key = std::move(*key);
  out.value = std::move(*value);
  out.create_revision = int_field(kv, "create_revision");
  out.mod_revision = int_field(kv, "mod_revision");
  out.version = int_field(kv, "version");
  out.lease = int_field(kv, "lease");
  return out;
}

Result<RangeResult> decode_range(const json& answer) {
  RangeResult out;
  out.revision = header_revision(answer);
  auto kvs = answer.find("kvs");
  if (kvs == answer.end()) return out;
  if (!kvs->is_array()) return Status(Errc::corruption, "etcd: kvs is not an array");
  for (const auto& kv : *kvs) {
    auto d = decode_kv(kv);
    if (!d.ok()) return d.status();
    out.kvs.push_back(std::move(*d));
  }
  return out;
}

Result<TxnResult> decode_txn(const json& answer) {
  TxnResult out;
  out.revision = header_revision(answer);
  auto ok = answer.find("succeeded");
  out.succeeded = ok != answer.end() && ok->is_boolean() && ok->get<bool>();
  auto responses = answer.find("responses");
  if (responses == answer.end()) return out;
  if (!responses->is_array()) return Status(Errc::corruption, "etcd: responses is not an array");
  for (const auto& r : *responses) {
    auto range = r.find("response_range");
    if (range == r.end()) continue;
    auto d = decode_range(*range);
    if (!d.ok()) return d.status();
    out.ranges.push_back(std::move(*d));
  }
  return out;
}

Status error_of(const json& answer) {
  if (!answer.is_object()) return Status(Errc::corruption, "etcd: answer is not a JSON object");
  auto err = answer.find("error");
  if (err == answer.end()) return Status::Ok();
  const int64_t code = int_field(answer, "code");
  std::string msg = "etcd: " + (err->is_string() ? err->get<std::string>() : err->dump());
  switch (code) {
    case 5:
      return Status(Errc::not_found, msg);
    case 11:
      return Status(Errc::out_of_range, msg);
    case 3:
      return Status(Errc::invalid_argument, msg);
    default:
      return Status(Errc::io_error, msg);
  }
}

bool is_unavailable(const json& answer) {
  return answer.is_object() && answer.contains("error") && int_field(answer, "code") == 14;
}

Result<WatchMessage> decode_watch_message(const json& message) {
  if (Status st = error_of(message); !st.ok()) return st;
  auto result = message.find("result");
  if (result == message.end() || !result->is_object()) {
    return Status(Errc::corruption, "etcd: watch message without result");
  }
  const json& r = *result;
  WatchMessage out;
  out.revision = header_revision(r);
  out.created = r.value("created", false);
  out.canceled = r.value("canceled", false);
  out.compact_revision = int_field(r, "compact_revision");
  out.cancel_reason = r.value("cancel_reason", std::string());
  auto events = r.find("events");
  if (events != r.end() && events->is_array()) {
    for (const auto& e : *events) {
      WatchEvent ev;
      ev.type = e.value("type", std::string()) == "DELETE" ? WatchEvent::Type::del
                                                           : WatchEvent::Type::put;
      auto kv = e.find("kv");
      if (kv == e.end()) return Status(Errc::corruption, "etcd: watch event without kv");
      auto d = decode_kv(*kv);
      if (!d.ok()) return d.status();
      ev.kv = std::move(*d);
      out.events.push_back(std::move(ev));
    }
  }
  return out;
}

std::vector<std::string> ObjectSplitter::feed(std::string_view bytes) {
  pending_.append(bytes);
  std::vector<std::string> out;
  for (size_t i = scanned_; i < pending_.size(); ++i) {
    const char c = pending_[i];
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      continue;
    }
    if (c == '"') {
      in_string_ = depth_ > 0;
    } else if (c == '{') {
      if (depth_++ == 0) start_ = i;
    } else if (c == '}' && depth_ > 0) {
      if (--depth_ == 0) out.emplace_back(pending_, start_, i + 1 - start_);
    }
  }
  // Drop what was consumed: everything before the open object (or everything, between objects).
  const size_t keep_from = depth_ > 0 ? start_ : pending_.size();
  pending_.erase(0, keep_from);
  start_ = 0;
  scanned_ = pending_.size();
  return out;
}

}  // namespace etcd_json
}  // namespace strata::broker::cluster
