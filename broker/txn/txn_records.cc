#include "broker/txn/txn_records.h"

#include "protocol/wire/decode_error.h"
#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace strata::broker::txn::records {

namespace {
constexpr int16_t kStateKeyVersion = 0;
constexpr int16_t kOffsetsKeyVersion = 0x5354;
constexpr int16_t kValueVersion = 0;

std::string take(const protocol::Writer& w) {
  const auto& b = w.buffer();
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

protocol::Reader reader_of(std::string_view s) {
  return protocol::Reader(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string key_of(int16_t version, std::string_view txn_id) {
  protocol::Writer w(4 + txn_id.size());
  w.write_int16(version);
  w.write_string(txn_id);
  return take(w);
}
}  // namespace

int8_t status_byte(TxnState s) {
  switch (s) {
    case TxnState::empty:
      return 0;
    case TxnState::ongoing:
      return 1;
    case TxnState::prepare_commit:
      return 2;
    case TxnState::prepare_abort:
      return 3;
    case TxnState::complete_commit:
      return 4;
    case TxnState::complete_abort:
      return 5;
  }
  return 0;
}

std::optional<TxnState> state_of_status(int8_t status) {
  switch (status) {
    case 0:
      return TxnState::empty;
    case 1:
      return TxnState::ongoing;
    case 2:
      return TxnState::prepare_commit;
    case 3:
      return TxnState::prepare_abort;
    case 4:
      return TxnState::complete_commit;
    case 5:
      return TxnState::complete_abort;
    default:
      return std::nullopt;
  }
}

std::string state_key(std::string_view txn_id) { return key_of(kStateKeyVersion, txn_id); }
std::string offsets_key(std::string_view txn_id) { return key_of(kOffsetsKeyVersion, txn_id); }

std::optional<Key> decode_key(std::string_view key) {
  try {
    auto r = reader_of(key);
    const int16_t version = r.read_int16();
    if (version != kStateKeyVersion && version != kOffsetsKeyVersion) return std::nullopt;
    Key k;
    k.kind = version == kStateKeyVersion ? KeyKind::state : KeyKind::offsets;
    k.txn_id = r.read_string();
    if (r.remaining() != 0) return std::nullopt;
    return k;
  } catch (const protocol::DecodeError&) {
    return std::nullopt;
  }
}

std::string encode_state(const TxnMetadata& m, int64_t last_update_ms) {
  protocol::Writer w(64);
  w.write_int16(kValueVersion);
  w.write_int64(m.producer_id);
  w.write_int16(m.producer_epoch);
  w.write_int32(m.timeout_ms);
  w.write_int8(status_byte(m.state));
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& [topic, p] : m.partitions) by_topic[topic].push_back(p);
  w.write_array_length(static_cast<int32_t>(by_topic.size()));
  for (const auto& [topic, ps] : by_topic) {
    w.write_string(topic);
    w.write_array_length(static_cast<int32_t>(ps.size()));
    for (int32_t p : ps) w.write_int32(p);
  }
  w.write_int64(last_update_ms);
  w.write_int64(m.started_ms);
  return take(w);
}

bool decode_state(std::string_view value, TxnMetadata& m, int64_t& last_update_ms) {
  try {
    auto r = reader_of(value);
    const int16_t version = r.read_int16();
    // v1 (flexible, Kafka 4) adds tagged fields this coordinator does not write.
    if (version != kValueVersion) return false;
    TxnMetadata out;
    out.producer_id = r.read_int64();
    out.producer_epoch = r.read_int16();
    out.timeout_ms = r.read_int32();
    auto state = state_of_status(r.read_int8());
    if (!state) return false;
    out.state = *state;
    const int32_t topics = r.read_array_length();
    for (int32_t i = 0; i < topics; ++i) {
      std::string topic = r.read_string();
      const int32_t n = r.read_array_length();
      for (int32_t j = 0; j < n; ++j) out.partitions.emplace(topic, r.read_int32());
    }
    last_update_ms = r.read_int64();
    out.started_ms = r.read_int64();
    if (r.remaining() != 0) return false;
    m = std::move(out);
    return true;
  } catch (const protocol::DecodeError&) {
    return false;
  }
}

std::string encode_offsets(const TxnOffsets& offsets) {
  protocol::Writer w(64);
  w.write_int16(kValueVersion);
  w.write_array_length(static_cast<int32_t>(offsets.size()));
  for (const auto& [group, parts] : offsets) {
    w.write_string(group);
    w.write_array_length(static_cast<int32_t>(parts.size()));
    for (const auto& [tp, o] : parts) {
      w.write_string(tp.first);
      w.write_int32(tp.second);
      w.write_int64(o.offset);
      w.write_int32(o.leader_epoch);
      w.write_nullable_string(o.metadata);
    }
  }
  return take(w);
}

bool decode_offsets(std::string_view value, TxnOffsets& offsets) {
  try {
    auto r = reader_of(value);
    if (r.read_int16() != kValueVersion) return false;
    TxnOffsets out;
    const int32_t groups = r.read_array_length();
    for (int32_t i = 0; i < groups; ++i) {
      auto& parts = out[r.read_string()];
      const int32_t n = r.read_array_length();
      for (int32_t j = 0; j < n; ++j) {
        PendingOffset o;
        o.topic = r.read_string();
        o.partition = r.read_int32();
        o.offset = r.read_int64();
        o.leader_epoch = r.read_int32();
        o.metadata = r.read_nullable_string();
        parts[{o.topic, o.partition}] = std::move(o);
      }
    }
    if (r.remaining() != 0) return false;
    offsets = std::move(out);
    return true;
  } catch (const protocol::DecodeError&) {
    return false;
  }
}

}  // namespace strata::broker::txn::records
