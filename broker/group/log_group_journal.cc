#include "broker/group/log_group_journal.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <span>
#include <utility>

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

// Adds `records` in order (a nullopt value is a tombstone), for the group writes and for the
// import of an old store alike.
void add_records(protocol::RecordBatchBuilder& builder, std::span<const JournalRecord> records,
                 int64_t now) {
  for (const auto& r : records) {
    std::optional<std::span<const uint8_t>> value;
    if (r.value) value = bytes_of(*r.value);
    builder.add(now, bytes_of(r.key), value);
  }
}

// An import's batches stay around this size (a group with many offsets is split).
constexpr size_t kImportBatchBytes = size_t{1} << 20;
}  // namespace

// One appended batch waiting for the high watermark to pass it in the term it was appended in;
// woken by the log's high-watermark advances and by a deadline timer.
class LogGroupJournal::Wait : public std::enable_shared_from_this<Wait> {
 public:
  Wait(LogGroupJournal& j, std::shared_ptr<const TopicEntry> topic, int32_t partition,
       int64_t required_hw, int32_t epoch, std::vector<Answer> answers)
      : j_(j),
        topic_(std::move(topic)),
        log_(topic_->partition(partition)),
        partition_(partition),
        required_hw_(required_hw),
        epoch_(epoch),
        answers_(std::move(answers)),
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
    boost::asio::post(j_.io_, [answers = std::move(answers_), e, name = j_.options_.name] {
      for (const auto& a : answers) {
        try {  // one throwing answer must not strand the other writes of the batch
          a.done(e, a.last_offset);
        } catch (const std::exception& ex) {
          spdlog::error("answering a write to {} failed: {}", name, ex.what());
        }
      }
    });
  }

  LogGroupJournal& j_;
  const std::shared_ptr<const TopicEntry> topic_;  // keeps the log alive
  storage::PartitionLog* const log_;
  const int32_t partition_;
  const int64_t required_hw_;
  const int32_t epoch_;
  std::vector<Answer> answers_;  // one per write in the batch, in call order
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
      thread_([this] { worker(); }),
      writer_thread_([this] { writer(); }) {}

LogGroupJournal::~LogGroupJournal() { stop(); }

void LogGroupJournal::stop() {
  {
    std::lock_guard l(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard l(write_mu_);
    writer_stopping_ = true;
  }
  write_cv_.notify_all();
  if (writer_thread_.joinable()) writer_thread_.join();
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

size_t LogGroupJournal::max_write_bytes() const {
  auto topic = topics_.find(options_.name);
  if (!topic) return std::numeric_limits<size_t>::max();
  const auto max = static_cast<size_t>(std::max<int64_t>(topic->config.max_message_bytes, 0));
  return max > protocol::batch_format::kHeaderSize ? max - protocol::batch_format::kHeaderSize : 0;
}

void LogGroupJournal::fail(AppendDone done, ErrorCode e) {
  boost::asio::post(io_, [done = std::move(done), e] { done(e, -1); });
}

void LogGroupJournal::append(int32_t partition, std::vector<JournalRecord> records,
                             AppendDone done) {
  // Cluster: the leader term the caller sees now. A write still queued when leadership moved
  // away and back must not land in the new term, whose load did not see it.
  int32_t epoch = -1;
  if (cluster_) {
    auto topic = local_topic(false);
    storage::PartitionLog* log = topic ? topic->partition(partition) : nullptr;
    if (!log) return fail(std::move(done), ErrorCode::not_coordinator);
    epoch = log->latest_epoch();
  }
  {
    std::lock_guard l(write_mu_);
    if (!writer_stopping_) {
      writes_.push_back({partition, epoch, std::move(records), std::move(done)});
      write_cv_.notify_one();
      return;
    }
  }
  fail(std::move(done), ErrorCode::coordinator_not_available);
}

void LogGroupJournal::writer() {
  std::vector<Queued> taken;
  std::map<int32_t, std::vector<Queued*>> by_partition;
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock l(write_mu_);
      write_cv_.wait(l, [this] { return writer_stopping_ || !writes_.empty(); });
      if (writes_.empty()) return;
      stopping = writer_stopping_;
      taken.swap(writes_);
    }
    for (auto& w : taken) by_partition[w.partition].push_back(&w);
    for (auto& [p, writes] : by_partition) {
      if (stopping && cluster_) {
        // The replica manager has stopped: nothing would replicate them or wake their waits.
        for (Queued* w : writes) fail(std::exchange(w->done, nullptr), ErrorCode::not_coordinator);
        continue;
      }
      // On a single node the writes queued before stop() are still written (and fsynced).
      try {
        write_partition(p, writes);
      } catch (const std::exception& e) {
        spdlog::error("writing to {}-{} failed: {}", options_.name, p, e.what());
        for (Queued* w : writes) {
          if (w->done) fail(std::exchange(w->done, nullptr), ErrorCode::coordinator_not_available);
        }
      }
    }
    by_partition.clear();
    taken.clear();
  }
}

std::vector<size_t> journal_runs(std::span<const size_t> write_bytes, size_t max_bytes) {
  std::vector<size_t> ends;
  size_t run = protocol::batch_format::kHeaderSize;
  for (size_t i = 0; i < write_bytes.size(); ++i) {
    if (i > 0 && run + write_bytes[i] > max_bytes) {
      ends.push_back(i);
      run = protocol::batch_format::kHeaderSize;
    }
    run += write_bytes[i];
  }
  if (!write_bytes.empty()) ends.push_back(write_bytes.size());
  return ends;
}

void LogGroupJournal::write_partition(int32_t partition, std::vector<Queued*>& writes) {
  auto topic = local_topic(true);
  if (!topic || !topic->partition(partition)) {
    const ErrorCode e =
        !topic && !cluster_ ? ErrorCode::coordinator_not_available : ErrorCode::not_coordinator;
    for (Queued* w : writes) fail(std::exchange(w->done, nullptr), e);
    return;
  }
  // Runs of consecutive writes of one leader term within max.message.bytes, by an upper bound of
  // each record's encoded size; a write beyond the limit alone is built alone and refused.
  const auto max = static_cast<size_t>(std::max<int64_t>(topic->config.max_message_bytes, 0));
  std::vector<size_t> bytes;
  for (size_t start = 0; start < writes.size();) {
    size_t end = start;
    bytes.clear();
    while (end < writes.size() && writes[end]->epoch == writes[start]->epoch) {
      size_t b = 0;
      for (const auto& r : writes[end]->records) b += encoded_bound(r);
      bytes.push_back(b);
      ++end;
    }
    size_t from = start;
    for (size_t to : journal_runs(bytes, max)) {
      append_run(partition, topic, std::span(writes).subspan(from, start + to - from));
      from = start + to;
    }
    start = end;
  }
}

void LogGroupJournal::append_run(int32_t partition, const std::shared_ptr<const TopicEntry>& topic,
                                 std::span<Queued* const> run) {
  auto fail_all = [&](ErrorCode e) {
    for (Queued* w : run) fail(std::exchange(w->done, nullptr), e);
  };
  storage::PartitionLog* log = topic->partition(partition);
  const int32_t epoch = run.front()->epoch;
  if (cluster_) {
    if (cluster_->leader_check(options_.name, partition, epoch) != ErrorCode::none ||
        log->latest_epoch() != epoch) {
      return fail_all(ErrorCode::not_coordinator);
    }
    if (cluster_->min_isr_check(options_.name, partition, topic->config.min_insync_replicas) !=
        ErrorCode::none) {
      return fail_all(ErrorCode::coordinator_not_available);
    }
  }
  const int64_t now = now_ms();
  protocol::RecordBatchBuilder builder;
  std::vector<int64_t> last_deltas;  // of each write's last record
  last_deltas.reserve(run.size());
  for (Queued* w : run) {
    add_records(builder, w->records, now);
    last_deltas.push_back(builder.record_count() - 1);
  }
  std::vector<uint8_t> batch = builder.build();
  if (static_cast<int64_t>(batch.size()) > topic->config.max_message_bytes) {
    return fail_all(ErrorCode::invalid_commit_offset_size);
  }
  auto info = log->append(batch, now);
  if (!info.ok()) {
    const Errc c = info.status().code();
    spdlog::warn("appending to {}-{} failed: {}", options_.name, partition,
                 info.status().to_string());
    // Kafka: a storage error means another broker should coordinate; a shortage is transient.
    return fail_all(c == Errc::no_space || c == Errc::unavailable
                        ? ErrorCode::coordinator_not_available
                        : ErrorCode::not_coordinator);
  }
  std::vector<Answer> answers;
  answers.reserve(run.size());
  for (size_t i = 0; i < run.size(); ++i) {
    answers.push_back({std::exchange(run[i]->done, nullptr), info->base_offset + last_deltas[i]});
  }
  auto wait = std::make_shared<Wait>(*this, topic, partition, info->last_offset + 1, epoch,
                                     std::move(answers));
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
        bytes += encoded_bound(rest[n]);
        ++n;
      }
      protocol::RecordBatchBuilder builder;
      add_records(builder, rest.first(n), now);
      std::vector<uint8_t> batch = builder.build();
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
