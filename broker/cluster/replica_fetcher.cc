#include "broker/cluster/replica_fetcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "broker/cluster/replica_fetch.h"
#include "broker/cluster/replica_log.h"
#include "broker/cluster/replication_throttle.h"
#include "protocol/client/connection.h"
#include "protocol/messages/fetch.h"
#include "protocol/record/byte_order.h"
#include "protocol/wire/errors.h"
#include "storage/partition_log.h"

namespace strata::broker::cluster {

struct ReplicaFetcher::Entry {
  Entry(std::shared_ptr<storage::PartitionLog> log, int32_t epoch)
      : replica(std::move(log)), follower(replica, epoch) {}
  PartitionLogReplica replica;
  FollowerPartition follower;
  Clock::time_point ready_at{};  // backing off until then
  bool throttled = false;        // a replica being added: within the replication throttle
};

namespace {

using protocol::ErrorCode;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

FetchedPartition::Error map_error(ErrorCode code) {
  using E = FetchedPartition::Error;
  switch (code) {
    case ErrorCode::none:
      return E::none;
    case ErrorCode::offset_out_of_range:
      return E::offset_out_of_range;
    case ErrorCode::fenced_leader_epoch:
      return E::fenced_leader_epoch;
    case ErrorCode::unknown_leader_epoch:
      return E::unknown_leader_epoch;
    case ErrorCode::not_leader_or_follower:
      return E::not_leader;
    default:
      return E::other;
  }
}

// The prefix of `bytes` made of whole batches (baseOffset int64, batchLength int32, then
// batchLength bytes): a leader may cut the last batch at max_bytes, and such a tail is fetched
// again from its start next time.
size_t whole_batches(std::span<const uint8_t> bytes) {
  constexpr size_t kLogOverhead = 12;
  size_t pos = 0;
  while (bytes.size() - pos >= kLogOverhead) {
    const auto len = protocol::detail::load_be<int32_t>(bytes.data() + pos + 8);
    if (len <= 0 || static_cast<size_t>(len) > bytes.size() - pos - kLogOverhead) break;
    pos += kLogOverhead + static_cast<size_t>(len);
  }
  return pos;
}

}  // namespace

ReplicaFetcher::ReplicaFetcher(int32_t leader_id, std::string host, int port, Options options)
    : leader_id_(leader_id), host_(std::move(host)), port_(port), options_(std::move(options)) {
  thread_ = std::thread([this] { run(); });
}

ReplicaFetcher::~ReplicaFetcher() { stop(); }

void ReplicaFetcher::add(const std::string& topic, int32_t partition,
                         std::shared_ptr<storage::PartitionLog> log, int32_t leader_epoch,
                         bool throttled) {
  if (!log) return;
  auto entry = std::make_shared<Entry>(std::move(log), leader_epoch);
  entry->throttled = throttled && options_.throttle != nullptr;
  std::lock_guard lk(mu_);
  entries_[Key(topic, partition)] = std::move(entry);
  ++changes_;
  cv_.notify_all();
}

void ReplicaFetcher::remove(const std::string& topic, int32_t partition) {
  // Answers are applied under mu_ to registered entries only: once erased here, never touched.
  std::lock_guard lk(mu_);
  entries_.erase(Key(topic, partition));
  ++changes_;
  cv_.notify_all();
}

size_t ReplicaFetcher::size() const {
  std::lock_guard lk(mu_);
  return entries_.size();
}

void ReplicaFetcher::request_stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
}

void ReplicaFetcher::stop() {
  request_stop();
  std::lock_guard jl(join_mu_);
  if (thread_.joinable()) thread_.join();
}

ReplicaFetcher::Counters ReplicaFetcher::counters() const {
  Counters c;
  c.fetches = fetches_.load(std::memory_order_relaxed);
  c.bytes = bytes_.load(std::memory_order_relaxed);
  c.truncations = truncations_.load(std::memory_order_relaxed);
  c.connect_failures = connect_failures_.load(std::memory_order_relaxed);
  c.errors = errors_.load(std::memory_order_relaxed);
  return c;
}

void ReplicaFetcher::sleep_for(std::unique_lock<std::mutex>& lk, Clock::duration d) {
  cv_.wait_for(lk, d, [this] { return stopping_; });
}

void ReplicaFetcher::run() {
  const auto backoff = std::chrono::milliseconds(std::max(1, options_.backoff_ms));
  bool reported_failure = false;
  std::unique_lock lk(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    bool ready = false;
    auto next = Clock::time_point::max();
    for (const auto& [key, e] : entries_) {
      if (e->ready_at <= now) {
        ready = true;
        break;
      }
      next = std::min(next, e->ready_at);
    }
    if (!ready) {
      const uint64_t seen = changes_;
      auto woken = [&] { return stopping_ || changes_ != seen; };
      if (next == Clock::time_point::max()) {
        cv_.wait(lk, woken);
      } else {
        cv_.wait_until(lk, next, woken);
      }
      continue;
    }
    if (!conn_ || conn_->broken()) {
      conn_.reset();
      client::ConnectionOptions co;
      co.client_id = options_.client_id;
      co.connect_timeout_ms = options_.connect_timeout_ms;
      co.request_timeout_ms = options_.request_timeout_ms;
      co.security = options_.security;
      lk.unlock();
      auto opened = client::Connection::open(host_, port_, co);
      lk.lock();
      if (!opened.ok()) {
        connect_failures_.fetch_add(1, std::memory_order_relaxed);
        if (!reported_failure) {
          spdlog::warn(
              "replica fetcher: cannot reach leader {} at {}:{}: {} (retrying every {} ms)",
              leader_id_, host_, port_, opened.status().to_string(), backoff.count());
          reported_failure = true;
        }
        sleep_for(lk, backoff);
        continue;
      }
      if (reported_failure) spdlog::info("replica fetcher: connected to leader {}", leader_id_);
      reported_failure = false;
      conn_ = std::move(opened.value());
    }
    if (!fetch_round(lk)) {
      conn_.reset();
      sleep_for(lk, backoff);
    }
  }
  lk.unlock();
  conn_.reset();
  finished_.store(true, std::memory_order_release);
}

bool ReplicaFetcher::fetch_round(std::unique_lock<std::mutex>& lk) {
  const auto backoff = std::chrono::milliseconds(std::max(1, options_.backoff_ms));
  protocol::FetchRequest req;
  req.replica_id = options_.self_id;
  req.max_wait_ms = options_.max_wait_ms;
  req.min_bytes = 1;
  req.max_bytes = options_.max_bytes;
  req.isolation_level = 0;
  req.session_id = 0;      // no fetch session: every request is a full fetch
  req.session_epoch = -1;  // (sessionless)
  std::map<Key, std::shared_ptr<Entry>> round;
  const auto now = Clock::now();
  const int64_t throttle_delay = options_.throttle ? options_.throttle->delay_ms(wall_ms()) : 0;
  for (const auto& [key, e] : entries_) {  // ordered by topic: one Topic per run of keys
    if (e->ready_at > now) continue;
    if (e->throttled && throttle_delay > 0) {
      e->ready_at = now + std::chrono::milliseconds(throttle_delay);
      continue;
    }
    if (req.topics.empty() || req.topics.back().topic != key.first) {
      req.topics.emplace_back().topic = key.first;
    }
    const auto pos = e->follower.position();
    auto& p = req.topics.back().partitions.emplace_back();
    p.partition = key.second;
    p.current_leader_epoch = pos.current_leader_epoch;
    p.fetch_offset = pos.fetch_offset;
    p.last_fetched_epoch = pos.last_fetched_epoch;
    p.log_start_offset = e->replica.log().log_start_offset();
    p.partition_max_bytes = options_.max_bytes;
    p.strata_state_pending =
        options_.state_pending && options_.state_pending(key.first, key.second);
    round.emplace(key, e);
  }
  if (round.empty()) return true;

  lk.unlock();
  auto reply = conn_->call<protocol::FetchRequest, protocol::FetchResponse>(
      req, /*max_version=*/12, std::max(0, options_.max_wait_ms));
  lk.lock();
  if (stopping_) return true;

  // Partitions of this round still registered as they were (add() may have replaced them).
  auto current = [&](const Key& key) -> Entry* {
    auto r = round.find(key);
    auto it = entries_.find(key);
    if (r == round.end() || it == entries_.end() || it->second != r->second) return nullptr;
    return it->second.get();
  };
  auto back_off_round = [&] {
    for (const auto& [key, e] : round) {
      if (Entry* cur = current(key)) cur->ready_at = Clock::now() + backoff;
    }
  };
  if (!reply.ok()) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("replica fetcher: fetch from leader {} failed: {}", leader_id_,
                 reply.status().to_string());
    if (conn_->broken()) return false;
    back_off_round();
    return true;
  }
  fetches_.fetch_add(1, std::memory_order_relaxed);
  const auto& resp = reply->msg;
  if (resp.error_code != ErrorCode::none) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("replica fetcher: leader {} answered error {}", leader_id_,
                 static_cast<int>(resp.error_code));
    back_off_round();
    return true;
  }

  std::vector<uint8_t> joined;  // only when the records come in several parts
  for (const auto& t : resp.responses) {
    for (const auto& p : t.partitions) {
      const Key key(t.topic, p.partition_index);
      Entry* e = current(key);
      if (e == nullptr) continue;  // not asked this round, or removed/replaced meanwhile
      round.erase(key);            // answered once: a repeated entry is ignored
      FetchedPartition fp;
      fp.error = map_error(p.error_code);
      fp.high_watermark = p.high_watermark;
      fp.log_start_offset = p.log_start_offset;
      if (p.diverging_epoch.epoch >= 0 || p.diverging_epoch.end_offset >= 0) {
        fp.diverging = EpochEnd{p.diverging_epoch.epoch, p.diverging_epoch.end_offset};
      }
      std::span<const uint8_t> records;
      if (p.records.parts.size() == 1 && p.records.parts[0].data != nullptr) {
        records = {p.records.parts[0].data, p.records.parts[0].length};
      } else if (!p.records.parts.empty()) {
        joined.clear();
        for (const auto& part : p.records.parts) {
          if (part.data != nullptr) joined.insert(joined.end(), part.data, part.data + part.length);
        }
        records = joined;
      }
      fp.records = records.first(whole_batches(records));

      const uint64_t truncations_before = e->follower.truncations();
      auto next = e->follower.on_response(fp);
      truncations_.fetch_add(e->follower.truncations() - truncations_before,
                             std::memory_order_relaxed);
      if (!next.ok()) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("replica fetcher: {}-{} from leader {}: {}", key.first, key.second, leader_id_,
                     next.status().to_string());
        e->ready_at = Clock::now() + backoff;
        continue;
      }
      if (fp.error == FetchedPartition::Error::none && !fp.diverging) {
        bytes_.fetch_add(fp.records.size(), std::memory_order_relaxed);
        if (e->throttled) options_.throttle->record(fp.records.size(), wall_ms());
      }
      switch (*next) {
        case FollowerPartition::Next::fetch:
          e->ready_at = {};
          break;
        case FollowerPartition::Next::backoff:
          e->ready_at = Clock::now() + backoff;
          break;
        case FollowerPartition::Next::wait_for_leader_change:
          // Retried after the backoff rather than parked until the view changes: the common
          // case is a new leader that has not applied its leadership yet (the follower saw the
          // view first), and no further view change may ever come to un-park it.
          spdlog::info("replica fetcher: {}-{}: leader {} answered error {}; retrying in {} ms",
                       key.first, key.second, leader_id_, static_cast<int>(p.error_code),
                       options_.backoff_ms);
          e->ready_at = Clock::now() + backoff;
          break;
      }
    }
  }
  return true;
}

}  // namespace strata::broker::cluster
