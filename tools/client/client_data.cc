// Client: Produce, Fetch and ListOffsets (see client.h).
#include <algorithm>
#include <chrono>

#include "protocol/messages/fetch.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/messages/produce.h"
#include "protocol/pk/partitioner.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_batch.h"
#include "protocol/record/record_reader.h"
#include "tools/client/client.h"

namespace strata::client {
namespace {

std::optional<std::span<const uint8_t>> opt_bytes(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s->data()), s->size());
}

std::optional<std::string> opt_string(const std::optional<std::span<const uint8_t>>& b) {
  if (!b) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(b->data()), b->size());
}

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string part_ctx(const std::string& topic, int32_t p) {
  return "topic '" + topic + "' partition " + std::to_string(p);
}

}  // namespace

Result<ProduceResult> Client::produce(const std::string& topic,
                                      std::span<const ProduceRecord> records,
                                      protocol::pk::Partitioner partitioner) {
  ProduceResult out;
  out.placements.resize(records.size(), {-1, -1});
  if (records.empty()) return out;
  auto info = this->topic(topic);
  if (!info.ok()) return info.status();
  const auto nparts = static_cast<int32_t>(info->partitions.size());
  if (nparts <= 0) return kafka_status(3, "topic '" + topic + "' has no partitions");

  // partition -> input indexes
  std::map<int32_t, std::vector<size_t>> by_partition;
  for (size_t i = 0; i < records.size(); ++i) {
    int32_t p = records[i].partition;
    if (p < 0) {
      if (records[i].key) {
        p = protocol::pk::partition_for_key(partitioner, *opt_bytes(records[i].key), nparts);
      } else {
        p = static_cast<int32_t>(round_robin_++ % static_cast<uint32_t>(nparts));
      }
    }
    if (p >= nparts) return kafka_status(3, part_ctx(topic, p));
    by_partition[p].push_back(i);
  }

  // One batch per partition.
  std::map<int32_t, std::vector<uint8_t>> batches;
  std::vector<protocol::Header> headers;
  const int64_t now = wall_ms();
  for (const auto& [p, idx] : by_partition) {
    protocol::RecordBatchBuilder b;
    for (size_t i : idx) {
      const ProduceRecord& r = records[i];
      headers.clear();
      for (const auto& h : r.headers)
        headers.push_back(protocol::Header{h.key, opt_bytes(h.value)});
      b.add(r.timestamp >= 0 ? r.timestamp : now, opt_bytes(r.key), opt_bytes(r.value), headers);
    }
    batches[p] = b.build();
  }

  std::map<Connection*, std::vector<int32_t>> by_leader;
  for (const auto& [p, idx] : by_partition) {
    auto conn = leader_connection(topic, p);
    if (!conn.ok()) return conn.status();
    by_leader[*conn].push_back(p);
  }
  for (const auto& [conn, parts] : by_leader) {
    protocol::ProduceRequest req;
    req.acks = -1;
    req.timeout_ms = opts_.request_timeout_ms;
    protocol::ProduceRequest::TopicData td;
    td.name = topic;
    for (int32_t p : parts) {
      protocol::ProduceRequest::PartitionData pd;
      pd.index = p;
      pd.records = protocol::Records::view(batches[p]);
      td.partition_data.push_back(std::move(pd));
    }
    req.topic_data.push_back(std::move(td));
    // v3 is the oldest version carrying RecordBatch v2.
    auto reply = conn->call<protocol::ProduceRequest, protocol::ProduceResponse>(req);
    if (!reply.ok()) return reply.status();
    size_t answered = 0;
    for (const auto& tr : reply->msg.responses) {
      for (const auto& pr : tr.partition_responses) {
        if (pr.error_code != protocol::ErrorCode::none) {
          std::string detail = pr.error_message.value_or("");
          for (const auto& re : pr.record_errors) {
            if (re.batch_index_error_message) {
              detail += (detail.empty() ? "" : "; ") + std::string("record ") +
                        std::to_string(re.batch_index) + ": " + *re.batch_index_error_message;
            }
          }
          return kafka_status(pr.error_code, part_ctx(topic, pr.index), detail);
        }
        auto it = by_partition.find(pr.index);
        if (it == by_partition.end()) continue;
        for (size_t k = 0; k < it->second.size(); ++k) {
          out.placements[it->second[k]] = {pr.index, pr.base_offset + static_cast<int64_t>(k)};
        }
        ++answered;
      }
    }
    if (answered != parts.size()) {
      return connection_status("Produce response is missing partitions of '" + topic + "'");
    }
  }
  return out;
}

namespace {

// Decodes the records of one Fetch partition response from `offset` on into `out`.
Status decode_fetched(const std::string& topic, const protocol::FetchResponse::Partition& pr,
                      int64_t offset, FetchResult& out) {
  const int32_t partition = pr.partition_index;
  out.next_offset = offset;
  out.high_watermark = pr.high_watermark;
  out.log_start_offset = pr.log_start_offset;
  protocol::RecordReader reader;
  protocol::Record rec;
  for (const auto& part : pr.records.parts) {
    if (part.data == nullptr) continue;
    std::span<const uint8_t> buf(part.data, part.length);
    while (!buf.empty()) {
      const size_t n = protocol::peek_batch_size(buf);
      if (n == 0 || n > buf.size()) break;  // partial batch at the end of the response
      protocol::RecordBatchView batch(buf.subspan(0, n));
      buf = buf.subspan(n);
      if (batch.validate() != protocol::BatchCheck::ok) {
        return Status(Errc::corruption, "CORRUPT_MESSAGE: " + part_ctx(topic, partition) +
                                            " batch at offset " +
                                            std::to_string(batch.base_offset()));
      }
      out.next_offset = std::max(out.next_offset, batch.next_offset());
      if (batch.is_control()) continue;
      Status st = reader.reset(batch);
      if (!st.ok()) return Status(Errc::corruption, "CORRUPT_MESSAGE: " + st.message());
      for (;;) {
        auto more = reader.next(rec);
        if (!more.ok()) {
          return Status(Errc::corruption, "CORRUPT_MESSAGE: " + more.status().message());
        }
        if (!*more) break;
        const int64_t off = reader.offset_of(rec);
        if (off < offset) continue;
        FetchedRecord fr;
        fr.partition = partition;
        fr.offset = off;
        fr.timestamp = reader.timestamp_of(rec);
        fr.key = opt_string(rec.key);
        fr.value = opt_string(rec.value);
        auto hi = rec.headers();
        protocol::Header h;
        while (hi.next(h)) {
          fr.headers.push_back(RecordHeader{std::string(h.key), opt_string(h.value)});
        }
        out.records.push_back(std::move(fr));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

Result<FetchResult> Client::fetch(const std::string& topic, int32_t partition, int64_t offset,
                                  int32_t max_wait_ms, int32_t max_bytes) {
  auto r = fetch_partitions(topic, {{partition, offset}}, max_wait_ms, max_bytes);
  if (!r.ok()) return r.status();
  auto it = r->find(partition);
  if (it == r->end()) {
    return connection_status("Fetch response lacks " + part_ctx(topic, partition));
  }
  return std::move(it->second);
}

Result<std::map<int32_t, FetchResult>> Client::fetch_partitions(
    const std::string& topic, const std::map<int32_t, int64_t>& offsets, int32_t max_wait_ms,
    int32_t max_bytes) {
  std::map<Connection*, std::vector<int32_t>> by_leader;
  for (const auto& [p, off] : offsets) {
    (void)off;
    auto conn = leader_connection(topic, p);
    if (!conn.ok()) return conn.status();
    by_leader[*conn].push_back(p);
  }
  std::map<int32_t, FetchResult> out;
  for (const auto& [conn, parts] : by_leader) {
    protocol::FetchRequest req;
    req.replica_id = -1;
    req.max_wait_ms = max_wait_ms;
    req.min_bytes = 1;
    req.max_bytes = max_bytes;
    req.isolation_level = 0;
    protocol::FetchRequest::Topic t;
    t.topic = topic;
    for (int32_t p : parts) {
      protocol::FetchRequest::Partition fp;
      fp.partition = p;
      fp.fetch_offset = offsets.at(p);
      fp.partition_max_bytes = max_bytes;
      t.partitions.push_back(fp);
    }
    req.topics.push_back(std::move(t));
    auto reply = conn->call<protocol::FetchRequest, protocol::FetchResponse>(req, -1, max_wait_ms);
    if (!reply.ok()) return reply.status();
    if (reply->msg.error_code != protocol::ErrorCode::none)
      return kafka_status(reply->msg.error_code, "Fetch");
    for (const auto& tr : reply->msg.responses) {
      for (const auto& pr : tr.partitions) {
        auto want = offsets.find(pr.partition_index);
        if (tr.topic != topic || want == offsets.end()) continue;
        if (pr.error_code != protocol::ErrorCode::none) {
          return kafka_status(pr.error_code, part_ctx(topic, pr.partition_index));
        }
        STRATA_RETURN_IF_ERROR(decode_fetched(topic, pr, want->second, out[pr.partition_index]));
      }
    }
  }
  return out;
}

Result<std::vector<PartitionOffset>> Client::list_offsets(const std::string& topic,
                                                          int64_t timestamp,
                                                          const std::vector<int32_t>& partitions) {
  std::vector<int32_t> parts = partitions;
  if (parts.empty()) {
    auto info = this->topic(topic);
    if (!info.ok()) return info.status();
    for (const auto& p : info->partitions) parts.push_back(p.partition);
  }
  std::map<Connection*, std::vector<int32_t>> by_leader;
  for (int32_t p : parts) {
    auto conn = leader_connection(topic, p);
    if (!conn.ok()) return conn.status();
    by_leader[*conn].push_back(p);
  }
  std::vector<PartitionOffset> out;
  for (const auto& [conn, ps] : by_leader) {
    protocol::ListOffsetsRequest req;
    req.replica_id = -1;
    req.isolation_level = 0;
    protocol::ListOffsetsRequest::Topic t;
    t.name = topic;
    for (int32_t p : ps) {
      protocol::ListOffsetsRequest::Partition lp;
      lp.partition_index = p;
      lp.timestamp = timestamp;
      t.partitions.push_back(lp);
    }
    req.topics.push_back(std::move(t));
    auto reply = conn->call<protocol::ListOffsetsRequest, protocol::ListOffsetsResponse>(req);
    if (!reply.ok()) return reply.status();
    for (const auto& tr : reply->msg.topics) {
      for (const auto& pr : tr.partitions) {
        if (pr.error_code != protocol::ErrorCode::none)
          return kafka_status(pr.error_code, part_ctx(topic, pr.partition_index));
        out.push_back(PartitionOffset{pr.partition_index, pr.offset, pr.timestamp});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const PartitionOffset& a, const PartitionOffset& b) {
    return a.partition < b.partition;
  });
  return out;
}

}  // namespace strata::client
