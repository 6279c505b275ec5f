#include "broker/cluster/checkpoint_copier.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "broker/cluster/replication_throttle.h"
#include "broker/topics/topic_registry.h"
#include "pkindex/pk_checkpoint.h"
#include "protocol/client/connection.h"
#include "protocol/ext/api_keys.h"
#include "protocol/ext/replica_checkpoint.pb.h"
#include "storage/partition_log.h"

namespace strata::broker::cluster {

namespace {
int64_t mono_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

CheckpointCopier::CheckpointCopier(TopicRegistry& topics, Options options)
    : topics_(topics), options_(std::move(options)), thread_([this] { loop(); }) {}

CheckpointCopier::~CheckpointCopier() { stop(); }

void CheckpointCopier::stop() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CheckpointCopier::request(const std::string& topic, int32_t partition) {
  {
    std::lock_guard l(mu_);
    if (stopping_) return;
    if (!pending_.insert({topic, partition}).second) {
      // Queued: nothing to do. Being copied: the state went offline again after (or while) it
      // reopened, so copy once more after this one.
      if (running_ == Key{topic, partition}) again_ = true;
      return;
    }
    pending_count_.store(pending_.size(), std::memory_order_release);
    queue_.push_back({topic, partition});
  }
  cv_.notify_all();
}

bool CheckpointCopier::pending(const std::string& topic, int32_t partition) const {
  if (pending_count_.load(std::memory_order_acquire) == 0) return false;
  std::lock_guard l(mu_);
  return pending_.count({topic, partition}) > 0;
}

uint64_t CheckpointCopier::copied_bytes() const {
  std::lock_guard l(mu_);
  return copied_bytes_;
}

uint64_t CheckpointCopier::completed() const {
  std::lock_guard l(mu_);
  return completed_;
}

void CheckpointCopier::loop() {
  std::unique_lock l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Key k = queue_.front();
    queue_.pop_front();
    running_ = k;
    again_ = false;
    l.unlock();
    Status st = copy(k);
    l.lock();
    running_.reset();
    if (st.ok() && again_) {
      queue_.push_back(k);  // still pending
      continue;
    }
    if (st.ok()) {
      pending_.erase(k);
      pending_count_.store(pending_.size(), std::memory_order_release);
      ++completed_;
      continue;
    }
    if (stopping_) return;
    spdlog::warn("copying the state checkpoint of {}-{} failed (retrying): {}", k.first, k.second,
                 st.to_string());
    cv_.wait_for(l, std::chrono::seconds(1), [this] { return stopping_; });
    if (stopping_) return;
    queue_.push_back(k);  // still pending
  }
}

Status CheckpointCopier::copy(const Key& k) {
  const auto& [topic, partition] = k;
  auto entry = topics_.find(topic);
  storage::PartitionLog* log = entry ? entry->partition(partition) : nullptr;
  if (!log) return Status::Ok();  // the topic went away: nothing to do
  auto leader = options_.leader(topic, partition);
  if (!leader) return Status(Errc::unavailable, "no leader to copy from");
  client::ConnectionOptions co;
  co.client_id = "strata-checkpoint-copy";
  co.security = options_.security;
  auto conn = client::Connection::open(leader->first, leader->second, co);
  if (!conn.ok()) return conn.status();
  auto call = [&](const ext::ReplicaCheckpointRequest& req,
                  ext::ReplicaCheckpointResponse& resp) -> Status {
    STRATA_RETURN_IF_ERROR((*conn)->call_ext(protocol::ext::kReplicaCheckpoint, req, resp));
    if (resp.error_code() != 0) {
      return Status(Errc::unavailable, "leader answered error " +
                                           std::to_string(resp.error_code()) + ": " +
                                           resp.error_message());
    }
    return Status::Ok();
  };
  ext::ReplicaCheckpointRequest list;
  list.set_topic(topic);
  list.set_partition(partition);
  list.set_checkpoint_offset(-1);
  ext::ReplicaCheckpointResponse listed;
  STRATA_RETURN_IF_ERROR(call(list, listed));
  const int64_t offset = listed.checkpoint_offset();
  const std::string& dir = log->dir();
  const auto started = std::chrono::steady_clock::now();
  spdlog::info("copying state checkpoint {} of {}-{} ({} files) from {}:{}", offset, topic,
               partition, listed.files_size(), leader->first, leader->second);
  STRATA_RETURN_IF_ERROR(pkindex::checkpoint::install_begin(dir, offset));
  uint64_t bytes = 0;
  for (const auto& f : listed.files()) {
    int64_t pos = 0;
    // An empty file is created by its first (empty) append.
    STRATA_RETURN_IF_ERROR(pkindex::checkpoint::install_append(dir, offset, f.name(), {}));
    while (pos < f.size()) {
      if (options_.throttle) {
        for (int64_t d = options_.throttle->delay_ms(mono_ms()); d > 0;
             d = options_.throttle->delay_ms(mono_ms())) {
          std::unique_lock l(mu_);
          if (cv_.wait_for(l, std::chrono::milliseconds(d), [this] { return stopping_; })) {
            return Status(Errc::shutting_down, "stopping");
          }
        }
      }
      ext::ReplicaCheckpointRequest req;
      req.set_topic(topic);
      req.set_partition(partition);
      req.set_checkpoint_offset(offset);
      req.set_file(f.name());
      req.set_position(pos);
      req.set_max_bytes(options_.chunk_bytes);
      ext::ReplicaCheckpointResponse resp;
      STRATA_RETURN_IF_ERROR(call(req, resp));
      if (resp.data().empty()) {
        return Status(Errc::corruption, "file " + f.name() + " ended before its listed size");
      }
      STRATA_RETURN_IF_ERROR(
          pkindex::checkpoint::install_append(dir, offset, f.name(), resp.data()));
      pos += static_cast<int64_t>(resp.data().size());
      bytes += resp.data().size();
      if (options_.throttle) options_.throttle->record(resp.data().size(), mono_ms());
      {
        std::lock_guard l(mu_);
        copied_bytes_ += resp.data().size();
        if (stopping_) return Status(Errc::shutting_down, "stopping");
      }
    }
  }
  STRATA_RETURN_IF_ERROR(pkindex::checkpoint::install_commit(dir, offset));
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  spdlog::info("copied state checkpoint {} of {}-{}: {} bytes in {:.2f} s ({:.1f} MB/s)", offset,
               topic, partition, bytes, secs, secs > 0 ? bytes / secs / 1e6 : 0.0);
  // The restore needs the local log to hold the checkpoint's offset (the fetcher is catching up).
  const int64_t deadline = mono_ms() + options_.wait_for_log_ms;
  while (log->log_end_offset() < offset + 1) {
    if (mono_ms() > deadline) return Status(Errc::unavailable, "the local log did not catch up");
    std::unique_lock l(mu_);
    if (cv_.wait_for(l, std::chrono::milliseconds(100), [this] { return stopping_; })) {
      return Status(Errc::shutting_down, "stopping");
    }
  }
  if (!options_.reopen(topic, partition)) {
    return Status(Errc::unavailable, "the state did not open from the copied checkpoint");
  }
  return Status::Ok();
}

}  // namespace strata::broker::cluster
