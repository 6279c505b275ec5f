#include "broker/metrics/scrape_collector.h"

#include <rocksdb/statistics.h>

#include <limits>
#include <map>
#include <utility>

#include "broker/cluster/cluster_node.h"
#include "broker/cluster/replica_manager.h"
#include "broker/group/group_coordinator.h"
#include "broker/metrics/broker_metrics.h"
#include "broker/metrics/families.h"
#include "broker/metrics/process_stats.h"
#include "broker/pk/pk_tables.h"
#include "broker/services.h"
#include "broker/topics/fd_budget.h"
#include "broker/topics/topic_registry.h"

namespace strata::broker::metrics {

using prometheus::MetricType;

std::vector<prometheus::MetricFamily> ScrapeCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  if (svc_.stopping()) return out;
  // The live topics: per-topic counters live on their entries, so a deleted topic has no series.
  const auto topics = svc_.topics.list();
  out = svc_.metrics.collect(topics);
  collect_partitions(out, topics);
  collect_group_lag(out);
  collect_pk(out, topics);
  if (svc_.cluster) collect_cluster(out);
  for (auto& f : collect_process_metrics()) out.push_back(std::move(f));
  return out;
}

void ScrapeCollector::collect_partitions(std::vector<prometheus::MetricFamily>& out,
                                         const TopicList& topics) const {
  auto start = family("strata_partition_log_start_offset", "First offset of the partition log.",
                      MetricType::Gauge);
  auto end = family("strata_partition_log_end_offset",
                    "Next offset to be written to the partition log.", MetricType::Gauge);
  auto hw = family("strata_partition_high_watermark", "High watermark (last readable offset + 1).",
                   MetricType::Gauge);
  auto size = family("strata_partition_size_bytes", "Bytes of the partition's segment files.",
                     MetricType::Gauge);
  for (const auto& t : topics) {
    for (size_t p = 0; p < t->partitions.size(); ++p) {
      const auto& log = t->partitions[p];
      const std::string part = std::to_string(p);
      add_sample(start, {{"topic", t->name}, {"partition", part}},
                 static_cast<double>(log->log_start_offset()));
      add_sample(end, {{"topic", t->name}, {"partition", part}},
                 static_cast<double>(log->log_end_offset()));
      add_sample(hw, {{"topic", t->name}, {"partition", part}},
                 static_cast<double>(log->high_watermark()));
      add_sample(size, {{"topic", t->name}, {"partition", part}},
                 static_cast<double>(log->size_bytes()));
    }
  }
  out.push_back(std::move(start));
  out.push_back(std::move(end));
  out.push_back(std::move(hw));
  out.push_back(std::move(size));
  // The descriptor budget CreateTopics / CreatePartitions are admitted against.
  auto fds = family("strata_partition_open_files_estimate",
                    "File descriptors the partitions are estimated to hold (segments, the active "
                    "segments' writers and indexes, PK partitions' RocksDB files).",
                    MetricType::Gauge);
  add_sample(fds, {}, static_cast<double>(svc_.topics.fd_estimate()));
  auto budget = family("strata_partition_open_files_budget",
                       "Open files limit less open.files.reserved: partitions estimated past it "
                       "are refused (+Inf: no limit).",
                       MetricType::Gauge);
  const int64_t b =
      partition_fd_budget(open_files_limit(), svc_.topics.broker_defaults()->open_files_reserved);
  add_sample(budget, {},
             b == INT64_MAX ? std::numeric_limits<double>::infinity() : static_cast<double>(b));
  out.push_back(std::move(fds));
  out.push_back(std::move(budget));
}

void ScrapeCollector::collect_cluster(std::vector<prometheus::MetricFamily>& out) const {
  const auto st = svc_.cluster->replica_stats();
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out.push_back(one_sample(name, help, MetricType::Counter, static_cast<double>(v)));
  };
  counter("strata_cluster_leader_elections_total",
          "Partition leaderships this broker took (each a new leader epoch).", st.leader_elections);
  counter("strata_cluster_isr_shrinks_total",
          "ISR shrinks this broker wrote as a leader (a follower lagged or left).", st.isr_shrinks);
  counter("strata_cluster_isr_expands_total",
          "ISR expansions this broker wrote as a leader (a follower caught up).", st.isr_expands);
  counter("strata_cluster_isr_write_conflicts_total",
          "ISR writes that lost the compare-and-swap in etcd (retried on the next view).",
          st.isr_write_conflicts);
  counter("strata_cluster_replica_fetch_bytes_total",
          "Record bytes this broker's replica fetchers appended as a follower.", st.fetched_bytes);
  counter("strata_cluster_replica_fetch_errors_total",
          "Failed replica fetch requests and partition answers of this broker's fetchers.",
          st.fetch_errors);
  auto gauge = [&](const char* name, const char* help, double v) {
    out.push_back(one_sample(name, help, MetricType::Gauge, v));
  };
  size_t under = 0;
  for (const auto& l : st.leading) under += l.isr < l.replicas ? 1 : 0;
  gauge("strata_cluster_leader_partitions", "Partitions this broker leads.",
        static_cast<double>(st.leading.size()));
  gauge("strata_cluster_follower_partitions", "Partitions this broker follows.",
        static_cast<double>(st.following));
  gauge("strata_cluster_under_replicated_partitions",
        "Partitions this broker leads whose ISR is smaller than their replica list.",
        static_cast<double>(under));
  gauge("strata_cluster_active_controller", "1 on the broker that is the controller, else 0.",
        svc_.cluster->controller_active() ? 1.0 : 0.0);
  if (svc_.cluster->controller_active()) {  // counted once, by the controller, as Kafka does
    size_t offline = 0;
    auto s = svc_.cluster->snapshot();
    for (const auto& [name, parts] : s->partitions) {
      for (const auto& [p, vp] : parts) offline += vp.state.leader < 0 ? 1 : 0;
    }
    gauge("strata_cluster_offline_partitions", "Partitions with no leader (controller only).",
          static_cast<double>(offline));
  }
  auto lag = family("strata_cluster_replica_lag_offsets",
                    "On a leader: its log end minus a follower's fetch position (-1 before the "
                    "follower's first fetch in this leader epoch).",
                    MetricType::Gauge);
  for (const auto& l : st.leading) {
    for (const auto& [replica, offsets] : l.lag) {
      add_sample(lag,
                 {{"topic", l.topic},
                  {"partition", std::to_string(l.partition)},
                  {"replica", std::to_string(replica)}},
                 static_cast<double>(offsets));
    }
  }
  out.push_back(std::move(lag));
}

void ScrapeCollector::collect_group_lag(std::vector<prometheus::MetricFamily>& out) const {
  auto lag = family("strata_consumer_group_lag",
                    "High watermark minus the group's committed offset, per partition.",
                    MetricType::Gauge);
  auto committed = family("strata_consumer_group_committed_offset",
                          "The group's committed offset, per partition.", MetricType::Gauge);
  auto& groups = svc_.groups;
  for (const auto& g : groups.list()) {
    std::vector<group::FetchedPartition> parts;
    if (groups.fetch_offsets(g.group_id, std::nullopt, parts) != protocol::ErrorCode::none)
      continue;
    for (const auto& fp : parts) {
      if (fp.error != protocol::ErrorCode::none || fp.offset < 0) continue;
      auto topic = svc_.topics.find(fp.topic);
      const storage::PartitionLog* log = topic ? topic->partition(fp.partition) : nullptr;
      if (!log) continue;
      const std::string part = std::to_string(fp.partition);
      add_sample(committed, {{"group", g.group_id}, {"topic", fp.topic}, {"partition", part}},
                 static_cast<double>(fp.offset));
      add_sample(lag, {{"group", g.group_id}, {"topic", fp.topic}, {"partition", part}},
                 static_cast<double>(std::max<int64_t>(0, log->high_watermark() - fp.offset)));
    }
  }
  out.push_back(std::move(lag));
  out.push_back(std::move(committed));
  auto owned = family("strata_group_coordinator_partitions",
                      "__consumer_offsets partitions this broker coordinates: loaded (serving "
                      "their groups) or loading (COORDINATOR_LOAD_IN_PROGRESS).",
                      MetricType::Gauge);
  const auto [loaded, loading] = groups.owned_partitions();
  add_sample(owned, {{"state", "loaded"}}, static_cast<double>(loaded));
  add_sample(owned, {{"state", "loading"}}, static_cast<double>(loading));
  out.push_back(std::move(owned));
}

void ScrapeCollector::collect_pk(std::vector<prometheus::MetricFamily>& out,
                                 const TopicList& topics) const {
  auto& pk = svc_.pk_tables;
  if (const auto& stats = pk.environment().statistics()) {
    const double hits = static_cast<double>(stats->getTickerCount(rocksdb::BLOCK_CACHE_HIT));
    const double misses = static_cast<double>(stats->getTickerCount(rocksdb::BLOCK_CACHE_MISS));
    auto h = family("strata_pk_block_cache_hits_total",
                    "RocksDB block-cache hits of all primary-key partitions.", MetricType::Counter);
    add_sample(h, {}, hits);
    auto m =
        family("strata_pk_block_cache_misses_total",
               "RocksDB block-cache misses of all primary-key partitions.", MetricType::Counter);
    add_sample(m, {}, misses);
    auto r = family("strata_pk_block_cache_hit_ratio",
                    "hits / (hits + misses) since start; 0 before the first block read.",
                    MetricType::Gauge);
    add_sample(r, {}, hits + misses > 0 ? hits / (hits + misses) : 0.0);
    out.push_back(std::move(h));
    out.push_back(std::move(m));
    out.push_back(std::move(r));
  }
  {
    const auto& env = pk.environment();
    auto w = family("strata_pk_write_buffer_bytes",
                    "Memory of every primary-key partition's memtables together, memtable bloom "
                    "filters included (flushes start beyond pk.write.buffer.bytes).",
                    MetricType::Gauge);
    add_sample(w, {}, static_cast<double>(env.write_buffer_usage()));
    auto b =
        family("strata_pk_memtable_blooms",
               "Primary-key partitions holding a memtable bloom filter (while they write 1 MiB "
               "per pk.memtable.idle.flush.ms, at most strata_pk_memtable_bloom_slots).",
               MetricType::Gauge);
    add_sample(b, {}, env.memtable_blooms_in_use());
    auto s = family("strata_pk_memtable_bloom_slots",
                    "Memtable bloom filters the primary-key partitions may hold at once (1/8 of "
                    "pk.write.buffer.bytes).",
                    MetricType::Gauge);
    add_sample(s, {}, env.memtable_bloom_slots());
    out.push_back(std::move(w));
    out.push_back(std::move(b));
    out.push_back(std::move(s));
  }
  {
    const auto rc = pk.environment().row_cache().stats();
    auto h =
        family("strata_pk_row_cache_hits_total",
               "Lookups answered from the row cache (pk.row.cache.bytes).", MetricType::Counter);
    add_sample(h, {}, static_cast<double>(rc.hits));
    auto m =
        family("strata_pk_row_cache_misses_total",
               "Lookups the row cache could not answer (read from RocksDB).", MetricType::Counter);
    add_sample(m, {}, static_cast<double>(rc.misses));
    auto f = family("strata_pk_row_cache_refused_fills_total",
                    "Rows read by a lookup not cached because a write changed their key meanwhile.",
                    MetricType::Counter);
    add_sample(f, {}, static_cast<double>(rc.refused_fills));
    auto u = family("strata_pk_row_cache_bytes", "Bytes the row cache holds (of its capacity).",
                    MetricType::Gauge);
    add_sample(u, {}, static_cast<double>(rc.usage_bytes));
    out.push_back(std::move(h));
    out.push_back(std::move(m));
    out.push_back(std::move(f));
    out.push_back(std::move(u));
  }
  auto mem =
      family("strata_pk_memtable_bytes",
             "RocksDB memtable bytes of a primary-key partition (rocksdb.cur-size-all-mem-tables).",
             MetricType::Gauge);
  auto pending = family("strata_pk_pending_compaction_bytes",
                        "RocksDB estimate of bytes compaction still has to rewrite "
                        "(rocksdb.estimate-pending-compaction-bytes).",
                        MetricType::Gauge);
  auto rows = family("strata_pk_rows_estimate",
                     "RocksDB estimate of rows in a primary-key partition.", MetricType::Gauge);
  auto applied =
      family("strata_pk_applied_offset",
             "Last log offset applied to the primary-key partition state.", MetricType::Gauge);
  auto age =
      family("strata_pk_checkpoint_age_seconds",
             "Age of the newest RocksDB checkpoint of a primary-key partition (absent: none).",
             MetricType::Gauge);
  const int64_t now = now_ms();
  for (const auto& t : topics) {
    for (size_t p = 0; p < t->partitions.size(); ++p) {
      auto state = pk.find_open(*t, static_cast<int32_t>(p));
      if (!state) continue;
      const std::string part = std::to_string(p);
      if (auto v = state->int_property("rocksdb.cur-size-all-mem-tables")) {
        add_sample(mem, {{"topic", t->name}, {"partition", part}}, static_cast<double>(*v));
      }
      if (auto v = state->int_property("rocksdb.estimate-pending-compaction-bytes")) {
        add_sample(pending, {{"topic", t->name}, {"partition", part}}, static_cast<double>(*v));
      }
      if (auto v = state->int_property("rocksdb.estimate-num-keys")) {
        add_sample(rows, {{"topic", t->name}, {"partition", part}}, static_cast<double>(*v));
      }
      add_sample(applied, {{"topic", t->name}, {"partition", part}},
                 static_cast<double>(state->applied_offset()));
      const pkindex::CheckpointInfo ck = state->newest_checkpoint();
      if (ck.created_ms >= 0) {
        add_sample(age, {{"topic", t->name}, {"partition", part}},
                   static_cast<double>(std::max<int64_t>(0, now - ck.created_ms)) / 1000.0);
      }
    }
  }
  out.push_back(std::move(mem));
  out.push_back(std::move(pending));
  out.push_back(std::move(rows));
  out.push_back(std::move(applied));
  out.push_back(std::move(age));
}

}  // namespace strata::broker::metrics
