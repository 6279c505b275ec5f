#include "broker/group/log_group_journal.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "broker/cluster/cluster_node.h"
#include "broker/group/group_records.h"
#include "broker/services.h"
#include "broker/topics/partition_watchers.h"
#include "broker/topics/topic_registry.h"
#include "protocol/record/batch_builder.h"
#include "protocol/record/record_reader.h"
#include "storage/log_scan.h"
#include "storage/partition_log.h"

namespace strata::broker::group {

namespace {
using protocol::ErrorCode;

std::span<const uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// One record batch holding `records` in order (a nullopt value is a tombstone), for the group
// writes and for the import of an old store alike.
std::vector<uint8_t> build_batch(std::span<const JournalRecord> records, int64_t now) {
  protocol::RecordBatchBuilder builder;
  for (const auto& r : records) {
    std::optional<std::span<const uint8_t>> value;
    if (r.value) value = bytes_of(*r.value);
    builder.add(now, bytes_of(r.key), value);
  }
  return builder.build();
}

// An import's batches stay around this size (a group with many offsets is split).
constexpr size_t kImportBatchBytes = size_t{1} << 20;
}  // namespace

// One appended batch waiting for the high watermark to pass it in the term it was appended in;
// woken by the log's high-watermark advances and by a deadline timer.
class LogGroupJournal::Wait : public std::enable_shared_from_this<Wait> {
 public:
  Wait(LogGroupJournal& j, std::shared_ptr<const TopicEntry> topic, int32_t partition,
       int64_t required_hw, int32_t epoch, int64_t last_offset, AppendDone done)
      : j_(j),
        topic_(std::move(topic)),
        log_(topic_->partition(partition)),
        partition_(partition),
        required_hw_(required_hw),
        epoch_(epoch),
        last_offset_(last_offset),
        done_(std::move(done)),
        timer_(j.io_) {}

  void start() {
    auto self = shared_from_this();
    timer_.expires_after(std::chrono::milliseconds(j_.options_.commit_timeout_ms));
    timer_.async_wait([self](boost::system::error_code ec) {
      if (!ec) self->run(true);
    });
    run(false);
  }

  void run(bool timed_out) {
    std::lock_guard l(mu_);
    if (finished_) return;
    const int64_t hw = log_->high_watermark();
    // An old leader that became a follower may have truncated the batch and fetched other
    // records to the same offsets: only this term's high watermark vouches for it.
    const bool same_term = !j_.cluster_ || (j_.cluster_->leader_check(j_.options_.name, partition_,
                                                                      epoch_) == ErrorCode::none &&
                                            log_->latest_epoch() == epoch_);
    if (!same_term) return finish(ErrorCode::not_coordinator);
    if (hw >= required_hw_) return finish(ErrorCode::none);
    if (timed_out) return finish(ErrorCode::coordinator_not_available);
    auto self = shared_from_this();
    watch_ = j_.watchers_.watch_logs(
        {log_}, {hw}, [self] { boost::asio::post(self->j_.io_, [self] { self->run(false); }); });
  }

 private:
  void finish(ErrorCode e) {
    finished_ = true;
    timer_.cancel();
    watch_.reset();
    boost::asio::post(j_.io_, [done = std::move(done_), e, last = last_offset_] { done(e, last); });
  }

  LogGroupJournal& j_;
  const std::shared_ptr<const TopicEntry> topic_;  // keeps the log alive
  storage::PartitionLog* const log_;
  const int32_t partition_;
  const int64_t required_hw_;
  const int32_t epoch_;
  const int64_t last_offset_;
  AppendDone done_;
  boost::asio::steady_timer timer_;
  std::mutex mu_;
  bool finished_ = false;
  std::shared_ptr<PartitionWatchers::Watch> watch_;
};

LogGroupJournal::LogGroupJournal(OffsetsTopicOptions options, TopicRegistry& topics,
                                 PartitionWatchers& watchers, boost::asio::io_context& io,
                                 cluster::ClusterNode* cluster)
    : options_(options),
      topics_(topics),
      watchers_(watchers),
      io_(io),
      cluster_(cluster),
      thread_([this] { worker(); }) {}

LogGroupJournal::~LogGroupJournal() { stop(); }

void LogGroupJournal::stop() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void LogGroupJournal::run_async(std::function<void()> fn) {
  {
    std::lock_guard l(mu_);
    if (stopping_) return;
    queue_.push_back(std::move(fn));
  }
  cv_.notify_one();
}

void LogGroupJournal::worker() {
  std::unique_lock l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto fn = std::move(queue_.front());
    queue_.pop_front();
    l.unlock();
    fn();
    l.lock();
  }
}

int32_t LogGroupJournal::partitions() const {
  if (cluster_) {
    auto s = cluster_->snapshot();
    auto t = s->topics.find(options_.name);
    if (t != s->topics.end() && !t->second.replicas.empty()) {
      return static_cast<int32_t>(t->second.replicas.size());
    }
  } else if (auto t = topics_.find(options_.name); t && !t->partitions.empty()) {
    return static_cast<int32_t>(t->partitions.size());
  }
  return options_.partitions;
}

bool LogGroupJournal::partitions_fixed() const {
  if (cluster_) return cluster_->snapshot()->topics.count(options_.name) > 0;
  return topics_.find(options_.name) != nullptr;
}

std::map<std::string, std::string> LogGroupJournal::topic_configs() const {
  std::map<std::string, std::string> c{
      {"cleanup.policy", "compact"},
      {"segment.bytes", std::to_string(options_.segment_bytes)},
  };
  if (!cluster_) c["flush.messages"] = "1";
  if (cluster_ && options_.min_insync_replicas > 0) {
    c["min.insync.replicas"] = std::to_string(options_.min_insync_replicas);
  }
  return c;
}

ErrorCode LogGroupJournal::request_cluster_topic() {
  if (!cluster_) return ErrorCode::none;
  if (cluster_->snapshot()->topics.count(options_.name)) return ErrorCode::none;
  if (!creating_.exchange(true)) {
    run_async([this] {
      create_cluster_topic();
      creating_ = false;
    });
  }
  return ErrorCode::coordinator_not_available;
}

ErrorCode LogGroupJournal::create_cluster_topic() {
  if (cluster_->snapshot()->topics.count(options_.name)) return ErrorCode::none;
  cluster::NewTopic nt;
  nt.name = options_.name;
  nt.topic_id = protocol::Uuid::random().to_string();
  nt.partitions = options_.partitions;
  nt.replication_factor = options_.replication_factor;
  nt.configs = topic_configs();
  auto created = cluster_->create_topic(nt);
  if (created.ok() || created.status().code() == Errc::already_exists) {
    if (created.ok()) {
      spdlog::info("created {} ({} partitions, replication factor {})", options_.name,
                   nt.partitions, nt.replication_factor);
    }
    return ErrorCode::none;
  }
  spdlog::warn("cannot create {} yet: {}", options_.name, created.status().to_string());
  return ErrorCode::coordinator_not_available;
}

std::shared_ptr<const TopicEntry> LogGroupJournal::local_topic(bool create) {
  if (auto t = topics_.find(options_.name)) return t;
  if (!create || cluster_) return nullptr;  // a cluster's is created through etcd
  std::lock_guard l(create_mu_);
  if (auto t = topics_.find(options_.name)) return t;
  auto created = topics_.create(options_.name, options_.partitions, topic_configs(), false);
  if (!created.ok()) {
    spdlog::error("creating {} failed: {}", options_.name, created.status().to_string());
    return nullptr;
  }
  spdlog::info("created {} ({} partitions)", options_.name, options_.partitions);
  return created.value();
}

void LogGroupJournal::append(int32_t partition, std::vector<JournalRecord> records,
                             AppendDone done) {
  auto fail = [&](ErrorCode e) {
    boost::asio::post(io_, [done = std::move(done), e] { done(e, -1); });
  };
  auto topic = local_topic(true);
  if (!topic) {
    return fail(cluster_ ? ErrorCode::not_coordinator : ErrorCode::coordinator_not_available);
  }
  storage::PartitionLog* log = topic->partition(partition);
  if (!log) return fail(ErrorCode::not_coordinator);
  int32_t epoch = -1;
  if (cluster_) {
    if (cluster_->leader_check(options_.name, partition, -1) != ErrorCode::none) {
      return fail(ErrorCode::not_coordinator);
    }
    if (cluster_->min_isr_check(options_.name, partition, topic->config.min_insync_replicas) !=
        ErrorCode::none) {
      return fail(ErrorCode::coordinator_not_available);
    }
    epoch = log->latest_epoch();
  }
  const int64_t now = now_ms();
  std::vector<uint8_t> batch = build_batch(records, now);
  if (static_cast<int64_t>(batch.size()) > topic->config.max_message_bytes) {
    return fail(ErrorCode::invalid_commit_offset_size);
  }
  auto info = log->append(batch, now);
  if (!info.ok()) {
    const Errc c = info.status().code();
    spdlog::warn("appending to {}-{} failed: {}", options_.name, partition,
                 info.status().to_string());
    // Kafka: a storage error means another broker should coordinate; a shortage is transient.
    return fail(c == Errc::no_space || c == Errc::unavailable ? ErrorCode::coordinator_not_available
                                                              : ErrorCode::not_coordinator);
  }
  auto wait = std::make_shared<Wait>(*this, std::move(topic), partition, info->last_offset + 1,
                                     epoch, info->last_offset, std::move(done));
  wait->start();
}

Status LogGroupJournal::import_records(const std::vector<JournalRecord>& records) {
  if (records.empty()) return Status::Ok();
  auto topic = local_topic(true);
  if (!topic) return Status(Errc::io_error, std::string("cannot create ") + options_.name);
  std::map<int32_t, std::vector<JournalRecord>> by_partition;
  for (const auto& r : records) {
    auto group = records::group_of(r.key);
    if (!group) continue;
    const int32_t p = partition_for_group(*group, static_cast<int32_t>(topic->partitions.size()));
    by_partition[p].push_back(r);
  }
  const int64_t now = now_ms();
  for (const auto& [p, recs] : by_partition) {
    storage::PartitionLog* log = topic->partition(p);
    if (!log) return Status(Errc::not_found, "no partition " + std::to_string(p));
    std::span<const JournalRecord> rest(recs);
    while (!rest.empty()) {
      size_t n = 0;
      size_t bytes = 0;
      while (n < rest.size() && (n == 0 || bytes < kImportBatchBytes)) {
        bytes += rest[n].key.size() + (rest[n].value ? rest[n].value->size() : 0);
        ++n;
      }
      std::vector<uint8_t> batch = build_batch(rest.first(n), now);
      auto info = log->append(batch, now);
      if (!info.ok()) return info.status();
      rest = rest.subspan(n);
    }
  }
  return Status::Ok();
}

Status LogGroupJournal::replay(int32_t partition,
                               const std::function<Status(const JournalRecord&)>& fn) {
  auto topic = local_topic(false);
  if (!topic) return Status::Ok();  // nothing written yet
  storage::PartitionLog* log = topic->partition(partition);
  if (!log) return Status::Ok();
  return replay_to(*log, log->log_end_offset(), fn);
}

Result<int64_t> LogGroupJournal::replay_committed(
    int32_t partition, const std::function<Status(const JournalRecord&)>& fn) {
  auto topic = local_topic(false);
  storage::PartitionLog* log = topic ? topic->partition(partition) : nullptr;
  if (!log) return Status(Errc::not_found, options_.name + " has no replica on this broker");
  const int64_t hw = log->high_watermark();
  STRATA_RETURN_IF_ERROR(replay_to(*log, hw, fn));
  return hw;
}

Status LogGroupJournal::replay_to(storage::PartitionLog& log, int64_t end,
                                  const std::function<Status(const JournalRecord&)>& fn) {
  protocol::RecordReader reader;
  protocol::Record r;
  JournalRecord rec;
  return storage::for_each_batch(
      log, log.log_start_offset(), end, [&](const protocol::RecordBatchView& batch) -> Status {
        if (batch.is_control()) return Status::Ok();
        STRATA_RETURN_IF_ERROR(reader.reset(batch));
        for (;;) {
          auto more = reader.next(r);
          if (!more.ok()) return more.status();
          if (!*more) return Status::Ok();
          if (!r.key || batch.base_offset() + r.offset_delta >= end) continue;
          rec.key.assign(reinterpret_cast<const char*>(r.key->data()), r.key->size());
          if (r.value) {
            rec.value.emplace(reinterpret_cast<const char*>(r.value->data()), r.value->size());
          } else {
            rec.value.reset();
          }
          STRATA_RETURN_IF_ERROR(fn(rec));
        }
      });
}

}  // namespace strata::broker::group
