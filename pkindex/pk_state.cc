// PkState lifecycle, apply, lookups and the log-first flush listener (see pk_state.h).
// write() and compute() are in pk_compute.cc, apply_changelog() and replay in pk_replay.cc.
#include "pkindex/pk_state.h"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/listener.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "pkindex/pk_files.h"
#include "pkindex/pk_scan.h"
#include "pkindex/row_format.h"
#include "protocol/pk/partitioner.h"
#include "storage/partition_log.h"

namespace strata::pkindex {

using namespace protocol::pk;  // wire facts: change headers, partitioners

namespace rf = row_format;

namespace {

// The key ranges of memtable insert hints: a key's first byte (rows, history, metadata), for keys
// of two bytes or more. RocksDB before 9.2.1 keeps one hint map per memtable for point inserts and
// range-deletion inserts alike, so a hint left by a DeleteRange would be used for a point insert
// into the other skiplist (memory corruption; facebook/rocksdb#12558, Debian 12 ships 7.8.3). The
// only range deletes here (the wipe in replay()) have one-byte bounds: outside this domain, they
// neither take nor leave a hint. A row of an empty key ("r") is inserted without a hint.
class FirstByteOfLongerKeys : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "strata.FirstByteOfLongerKeys"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override { return {key.data(), 1}; }
  bool InDomain(const rocksdb::Slice& key) const override { return key.size() >= 2; }
};

}  // namespace

// Log first, state second: before RocksDB writes a memtable to an SST (which makes the rows and
// the applied offset durable), fsync the partition log up to its end, which covers every offset
// the memtable holds (apply() only ever writes offsets already appended).
class PkState::FlushListener : public rocksdb::EventListener {
 public:
  FlushListener(storage::PartitionLog& log, std::atomic<int64_t>& persisted)
      : log_(log), persisted_(persisted) {}
  void OnFlushBegin(rocksdb::DB*, const rocksdb::FlushJobInfo&) override {
    Status st = log_.flush();
    syncs_.fetch_add(1, std::memory_order_relaxed);
    if (!st.ok()) failures_.fetch_add(1, std::memory_order_relaxed);
  }
  // The applied offset now in SSTs (the persisted tier skips the memtable: the WAL is off).
  void OnFlushCompleted(rocksdb::DB* db, const rocksdb::FlushJobInfo&) override {
    rocksdb::ReadOptions ro;
    ro.read_tier = rocksdb::kPersistedTier;
    std::string v;
    rocksdb::Status st =
        db->Get(ro, rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()), &v);
    if (st.ok() && v.size() == 8) {
      int64_t applied = rf::get_be64(reinterpret_cast<const uint8_t*>(v.data()));
      // Records of a transaction open at that point are needed by a replay, applied or not.
      std::string f;
      if (db->Get(ro, rocksdb::Slice(rf::kTxnFloorKey.data(), rf::kTxnFloorKey.size()), &f).ok() &&
          f.size() == 8) {
        applied = std::min(applied, rf::get_be64(reinterpret_cast<const uint8_t*>(f.data())) - 1);
      }
      int64_t cur = persisted_.load();
      while (applied > cur && !persisted_.compare_exchange_weak(cur, applied)) {
      }
    }
  }
  std::atomic<uint64_t> syncs_{0};
  std::atomic<uint64_t> failures_{0};

 private:
  storage::PartitionLog& log_;
  std::atomic<int64_t>& persisted_;
};

PkState::PkState(storage::PartitionLog& log, Options options)
    : log_(log), options_(std::move(options)), merger_(make_merger(options_.table.merge_engine)) {}

PkState::~PkState() { (void)close(); }

Result<std::unique_ptr<PkState>> PkState::open(PkEnvironment& env, storage::PartitionLog& log,
                                               Options options) {
  std::unique_ptr<PkState> s(new PkState(log, std::move(options)));
  s->env_ = &env;
  s->path_ = log.dir() + "/kv";
  s->listener_ = std::make_shared<FlushListener>(log, s->persisted_applied_);
  s->window_start_ms_.store(steady_ms());  // tend_memtable's first window
  s->clock_ = s->options_.clock ? s->options_.clock : Clock(system_clock_ms);
  STRATA_RETURN_IF_ERROR(s->load_checkpoints());  // leftovers removed, newest found
  STRATA_RETURN_IF_ERROR(s->open_db(env));
  rocksdb::DB* raw = s->db_.get();
  rocksdb::Status st;
  s->snapshots_ = make_snapshot_registry(raw, s->path_);  // Scan (pk_scan.cc)

  std::string applied;
  st = s->db_->Get(rocksdb::ReadOptions(),
                   rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()), &applied);
  if (st.ok() && applied.size() == 8) {
    s->applied_offset_.store(rf::get_be64(reinterpret_cast<const uint8_t*>(applied.data())));
  } else if (!st.IsNotFound()) {
    return Status(Errc::corruption, s->path_ + ": bad applied offset: " + st.ToString());
  }
  STRATA_RETURN_IF_ERROR(s->load_txn_floor());
  STRATA_RETURN_IF_ERROR(s->load_history_meta());
  // What open() read is in SSTs (WAL off).
  s->persisted_applied_.store(std::min(s->applied_offset(), s->txn_floor_ - 1));
  // State ahead of the log (torn tail truncated) or behind its start (retention passed it):
  // restore from a checkpoint (pk_checkpoint.cc), rebuild from an untruncated log, or go offline.
  if (s->applied_offset() + 1 > s->log_end_for_state() ||
      s->applied_offset() + 1 < log.log_start_offset()) {
    STRATA_RETURN_IF_ERROR(s->recover_ahead_of_log(env));
    s->snapshots_ = make_snapshot_registry(s->db_.get(), s->path_);
  }
  STRATA_RETURN_IF_ERROR(s->replay());
  return s;
}

Status PkState::open_db(PkEnvironment& env) {
  rocksdb::Options o;
  o.env = env.rocksdb_env();  // every file of the state through the environment's FileSystem
  o.create_if_missing = true;
  o.write_buffer_manager = env.write_buffer_manager();
  o.statistics = env.statistics();  // block-cache hit ratio (shared by all partitions)
  o.listeners.push_back(listener_);
  o.max_background_jobs = 2;
  o.max_open_files = env.options().max_open_files_per_partition;  // bounded fds (PkEnvironment)
  o.avoid_flush_during_shutdown = !options_.flush_on_close;
  o.write_buffer_size = PkEnvironment::kMemtableBytes;
  // What a written memtable holds at least (RocksDB's default: 1 MiB), charged to the
  // write-buffer manager: small blocks keep the charge of lightly written partitions near their
  // data (a full memtable costs 1,024 allocations).
  o.arena_block_size = 64u << 10;
  // Every upsert reads the current row first (compute) and most lookups of a loaded table miss the
  // active memtable: a whole-key memtable bloom filter skips the skiplist search for keys not in
  // it, on the partitions that hold one of the environment's filters (tend_memtable; measured in
  // docs/benchmarks.md, pk-apply).
  o.memtable_whole_key_filtering = true;
  o.memtable_prefix_bloom_size_ratio = bloom_held_ ? PkEnvironment::kMemtableBloomRatio : 0.0;
  // One insert hint per key range (FirstByteOfLongerKeys). Without it RocksDB searches every
  // insert from the skiplist's top unless the key lands right after the previous one; with it,
  // the rows of a batch written in key order (in_key_order) cost a search over the gap between
  // neighbours only.
  o.memtable_insert_with_hint_prefix_extractor = std::make_shared<FirstByteOfLongerKeys>();
  if (options_.table.ttl_ms > 0) {  // expired rows are dropped by compactions
    ttl_filter_ = std::make_unique<TtlCompactionFilter>(options_.table.ttl_ms, clock_);
    o.compaction_filter = ttl_filter_.get();
  }
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = env.block_cache();
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  rocksdb::DB* raw = nullptr;
  rocksdb::Status st = rocksdb::DB::Open(o, path_, &raw);
  if (!st.ok()) return Status(Errc::io_error, "open " + path_ + ": " + st.ToString());
  db_.reset(raw);
  cache_owner_.store(env.row_cache().new_owner(), std::memory_order_release);
  // RocksDB fsyncs kv/ for its files but never kv/'s own entry in the partition directory.
  return files::sync_dir(env.file_system(), log_.dir());
}

std::shared_lock<std::shared_mutex> PkState::read_lock() const {
  if (closing_.load(std::memory_order_acquire)) return {};
  std::shared_lock lk(db_mu_);
  if (!db_) return {};
  return lk;
}

Status PkState::close() {
  // New readers fail fast from here; running ones (lookups, scans of the registry, a checkpoint or
  // compaction holding db_mu_ shared) finish before RocksDB goes. A running write finishes first
  // (write_mu_), so no apply is cut in half.
  closing_.store(true, std::memory_order_release);
  std::lock_guard wl(write_mu_);
  clear_pending_locked();
  std::unique_lock lk(db_mu_);
  if (!db_) return Status::Ok();
  if (snapshots_) close_snapshot_registry(*snapshots_);  // Scan snapshots go before RocksDB
  rocksdb::Status st;
  if (options_.flush_on_close) st = db_->Flush(rocksdb::FlushOptions());
  rocksdb::Status cst = db_->Close();
  db_.reset();
  if (bloom_held_.exchange(false)) env_->release_memtable_bloom();
  if (!st.ok()) return Status(Errc::io_error, "flush " + path_ + ": " + st.ToString());
  if (!cst.ok()) return Status(Errc::io_error, "close " + path_ + ": " + cst.ToString());
  return Status::Ok();
}

Status PkState::flush() {
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "closed");
  rocksdb::Status st = db_->Flush(rocksdb::FlushOptions());
  return st.ok() ? Status::Ok() : Status(Errc::io_error, st.ToString());
}

uint64_t PkState::log_syncs() const { return listener_->syncs_.load(); }
uint64_t PkState::log_sync_failures() const { return listener_->failures_.load(); }

// RocksDB counts into a thread-local perf context on every read and write unless the thread turns
// it off (its default level is kEnableCount); nothing here reads those counters (metrics use
// rocksdb::Statistics, which this does not affect), and with a shared librocksdb each access is
// a general-dynamic TLS lookup. Measured (callgrind, strata-perf pk-apply): 16 % of the apply's
// instructions, 17 % of the raw puts'. The level is per thread and stays set, and the threads
// calling in are many (I/O, pools, replication), so the hot entry points set it; one
// thread-local store each. Per-thread perf-context diagnostics would have to set it back.
void PkState::quiet_perf_context() { rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable); }

int32_t PkState::partition_for(std::span<const uint8_t> key) const {
  return partition_for_key(options_.table.partitioner, key, options_.partition_count);
}

Result<std::optional<Overlay::Row>> PkState::current(const std::string& db_key,
                                                     const Overlay::Batch& building,
                                                     const Overlay* own) {
  using Row = std::optional<Overlay::Row>;
  if (auto it = building.rows.find(db_key); it != building.rows.end()) return Row(it->second);
  const Overlay::Row* held = own ? own->find(db_key) : nullptr;
  if (!held) held = overlay_.find(db_key);
  if (held) {
    // An overlay row past its TTL is absent too (its clock is its append time).
    if (held->present && options_.table.ttl_ms > 0 &&
        held->ttl_clock + options_.table.ttl_ms <= now_ms()) {
      return Row();
    }
    return Row(*held);
  }
  rocksdb::PinnableSlice v;
  rocksdb::Status st = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), db_key, &v);
  if (st.IsNotFound()) return Row();
  if (!st.ok()) return Status(Errc::io_error, st.ToString());
  auto row = rf::decode_row({reinterpret_cast<const uint8_t*>(v.data()), v.size()});
  if (!row) return Status(Errc::corruption, path_ + ": malformed row");
  if (options_.table.ttl_ms > 0 && expired(*row, now_ms())) return Row();  // expired = absent
  Overlay::Row r;
  r.present = true;
  r.ttl_clock = row->ttl_clock();
  r.value.assign(reinterpret_cast<const char*>(row->value.data()), row->value.size());
  r.version = row->version;
  return Row(std::move(r));
}

Status PkState::write_applied(rocksdb::WriteBatch& wb, int64_t applied) {
  uint8_t buf[8];
  rf::put_be64(buf, applied);
  wb.Put(rocksdb::Slice(rf::kAppliedKey.data(), rf::kAppliedKey.size()),
         rocksdb::Slice(reinterpret_cast<const char*>(buf), 8));
  const int64_t floor = open_txn_floor_locked();
  uint8_t floor_buf[8];
  if (floor != txn_floor_) {
    const rocksdb::Slice key(rf::kTxnFloorKey.data(), rf::kTxnFloorKey.size());
    if (floor == std::numeric_limits<int64_t>::max()) {
      wb.Delete(key);
    } else {
      rf::put_be64(floor_buf, floor);
      wb.Put(key, rocksdb::Slice(reinterpret_cast<const char*>(floor_buf), 8));
    }
  }
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;
  rocksdb::Status st = db_->Write(wo, &wb);
  if (!st.ok()) {
    failed_ = true;  // the state no longer matches the log: offline until reopened
    clear_pending_locked();
    return Status(Errc::io_error, "apply to " + path_ + ": " + st.ToString());
  }
  // Before the applied offset moves (and so before any acknowledgement): a lookup that reads the
  // new offset finds no cached row older than this write.
  if (RowCache& cache = env_->row_cache(); cache.enabled()) {
    struct Eraser : rocksdb::WriteBatch::Handler {
      RowCache& cache;
      uint64_t owner;
      Eraser(RowCache& c, uint64_t o) : cache(c), owner(o) {}
      rocksdb::Status drop(uint32_t cf, const rocksdb::Slice& key) {
        if (cf == 0 && !key.empty() && key[0] == rf::kRowPrefix) {
          cache.erase(owner, {key.data(), key.size()});
        }
        return rocksdb::Status::OK();
      }
      rocksdb::Status PutCF(uint32_t cf, const rocksdb::Slice& key,
                            const rocksdb::Slice&) override {
        return drop(cf, key);
      }
      rocksdb::Status DeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
        return drop(cf, key);
      }
      rocksdb::Status SingleDeleteCF(uint32_t cf, const rocksdb::Slice& key) override {
        return drop(cf, key);
      }
      rocksdb::Status MergeCF(uint32_t cf, const rocksdb::Slice& key,
                              const rocksdb::Slice&) override {
        return drop(cf, key);
      }
      // Only the wipe of a whole state deletes ranges, and it takes a new owner instead.
      rocksdb::Status DeleteRangeCF(uint32_t, const rocksdb::Slice&,
                                    const rocksdb::Slice&) override {
        return rocksdb::Status::NotSupported("a range delete in an apply batch");
      }
    } eraser(cache, cache_owner_.load(std::memory_order_acquire));
    if (auto ist = wb.Iterate(&eraser); !ist.ok()) {  // our own batch: cannot fail to parse
      failed_ = true;
      clear_pending_locked();
      return Status(Errc::io_error, "row cache of " + path_ + ": " + ist.ToString());
    }
  }
  txn_floor_ = floor;
  applied_offset_.store(applied, std::memory_order_release);
  note_memtable_write(wb.GetDataSize());
  return Status::Ok();
}

// A failed apply (a full disk under kv/: RocksDB's flush failed and it stopped taking writes)
// leaves the log ahead of the state. Once RocksDB can write again (Resume() retries the flush and
// clears its background error) the state catches up exactly as open() does: the overlay is
// dropped, the log is replayed from the applied offset to the high watermark, and what lies past
// it is held again, as lead() holds it. Until then writes fail (KAFKA_STORAGE_ERROR at the broker)
// and reads go on; a disk that stays full costs one Resume() per interval, not one per request.
Status PkState::heal_locked() {
  const Status offline(Errc::io_error, "primary-key state is offline after an I/O error");
  const int64_t now = steady_ms();
  if (last_heal_ms_ != 0 && now - last_heal_ms_ < kHealIntervalMs) return offline;
  last_heal_ms_ = now;
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  if (rocksdb::Status st = db_->Resume(); !st.ok()) {
    return Status(Errc::io_error, offline.message() + " (still: " + st.ToString() + ")");
  }
  lk.unlock();  // replay takes it per batch
  clear_pending_locked();
  failed_ = false;
  const int64_t hw = std::min(log_.high_watermark(), log_.log_end_offset());
  Status st = replay_range_locked(hw);
  if (st.ok() && (leading_ || !options_.replicated)) {
    st = for_each_log_batch(
        std::max(hw, applied_offset() + 1), log_.log_end_offset(),
        [&](const protocol::RecordBatchView& batch) { return hold_batch_locked(batch); });
  }
  if (!st.ok()) {
    clear_pending_locked();
    failed_ = true;
    return st;
  }
  return Status::Ok();
}

Status PkState::apply_front() {
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  // Off the overlay first: the floor written with the applied offset no longer counts it.
  Overlay::Batch p = std::move(overlay_.front());
  overlay_.pop_front();
  rocksdb::WriteBatch wb;
  // Rows in key order, then their history entries (another key range; in row-key order, which
  // is their own order for keys of one length).
  const auto order =
      in_key_order(p.ops.size(), [&](uint32_t i) -> const std::string& { return p.ops[i].key; });
  for (uint32_t i : order) {
    Overlay::Op& op = p.ops[i];
    const int64_t offset = op.offset >= 0 ? op.offset : p.base_offset + op.offset_delta;
    if (op.encoded.empty()) {
      wb.Delete(op.key);
    } else {
      if (p.txn_first_offset < 0) rf::patch_offset(op.encoded, offset);
      wb.Put(op.key, op.encoded);
    }
  }
  for (uint32_t i : order) {
    Overlay::Op& op = p.ops[i];
    const int64_t offset = op.offset >= 0 ? op.offset : p.base_offset + op.offset_delta;
    put_history(wb, op.key, op.encoded, op.timestamp, offset);
  }
  return write_applied(wb, p.last_offset());
}

Status PkState::apply_at(int64_t offset) {
  quiet_perf_context();
  std::lock_guard wl(write_mu_);
  if (failed_) STRATA_RETURN_IF_ERROR(heal_locked());
  while (overlay_.ready(offset)) STRATA_RETURN_IF_ERROR(apply_front());
  return Status::Ok();
}

size_t PkState::overlay_size() const {
  std::lock_guard wl(write_mu_);
  return overlay_.size();
}

Result<bool> PkState::answer_row(std::string_view stored, int64_t now_ms, LookupResult& out) const {
  auto row = rf::decode_row({reinterpret_cast<const uint8_t*>(stored.data()), stored.size()});
  if (!row) return Status(Errc::corruption, path_ + ": malformed row");
  if (options_.table.ttl_ms > 0 && expired(*row, now_ms)) return false;  // TTL
  out.found = true;
  out.value.assign(reinterpret_cast<const char*>(row->value.data()), row->value.size());
  out.offset = row->offset;
  out.timestamp = row->timestamp;
  return true;
}

// Hot rows come from the row cache; a miss reads RocksDB and fills it (row_cache.h: the ticket,
// taken before the read, keeps a row a concurrent write replaced out of the cache). Expired rows
// are never cached: compactions drop them from RocksDB without a write, so a cached copy could
// outlive them (with a clock stepped back it would read as live again).
Result<LookupResult> PkState::lookup(std::span<const uint8_t> key) const {
  // One key through the batch path: the same cache probe, fill ticket, read and answer.
  const std::span<const uint8_t> one[1] = {key};
  std::vector<LookupResult> out;
  STRATA_RETURN_IF_ERROR(lookup_many(one, out));
  return std::move(out[0]);
}

Status PkState::lookup_many(std::span<const std::span<const uint8_t>> keys,
                            std::vector<LookupResult>& out) const {
  quiet_perf_context();
  out.assign(keys.size(), LookupResult{});
  if (keys.empty()) return Status::Ok();
  auto lk = read_lock();
  if (!lk) return Status(Errc::shutting_down, "primary-key state is closed");
  // Scratch kept with the thread for requests of usual size (the broker's handler passes at most
  // 32 keys), so a hit allocates nothing but its answer's value; a larger call uses its own.
  struct Scratch {
    std::string row_keys;  // back to back
    std::vector<size_t> ends;
    std::vector<std::string_view> views;
    std::unique_ptr<bool[]> hit;
    size_t hit_size = 0;
    std::vector<size_t> missed;
    std::vector<uint64_t> tickets;
    std::vector<rocksdb::Slice> slices;
    std::vector<rocksdb::PinnableSlice> values;
    std::vector<rocksdb::Status> statuses;
  };
  constexpr size_t kKeptKeys = 64;
  thread_local Scratch kept;
  Scratch own;
  Scratch& sc = keys.size() <= kKeptKeys ? kept : own;
  // Whatever way this returns (an exception included): no block stays pinned by the scratch, and
  // the buffer of a call with large keys is not kept.
  struct Release {
    Scratch& sc;
    ~Release() {
      sc.values.clear();
      if (sc.row_keys.capacity() > (64u << 10)) std::string().swap(sc.row_keys);
    }
  } release{sc};
  const size_t n = keys.size();
  sc.row_keys.clear();
  sc.ends.clear();
  sc.views.clear();
  sc.missed.clear();
  sc.tickets.clear();
  sc.slices.clear();
  if (sc.hit_size < n) {
    sc.hit = std::make_unique<bool[]>(n);
    sc.hit_size = n;
  }
  for (const auto& key : keys) {
    rf::append_row_key(sc.row_keys, key);
    sc.ends.push_back(sc.row_keys.size());
  }
  for (size_t i = 0, at = 0; i < n; at = sc.ends[i++])  // views once the buffer no longer moves
    sc.views.emplace_back(sc.row_keys.data() + at, sc.ends[i] - at);
  RowCache& cache = env_->row_cache();
  const uint64_t owner = cache_owner_.load(std::memory_order_acquire);
  const int64_t now = options_.table.ttl_ms > 0 ? now_ms() : 0;
  Status bad;
  cache.visit_many(owner, sc.views, sc.hit.get(), [&](size_t i, std::string_view stored) {
    if (auto r = answer_row(stored, now, out[i]); !r.ok()) bad = r.status();
  });
  if (!bad.ok()) return bad;
  for (size_t i = 0; i < n; ++i) {
    if (sc.hit[i]) continue;
    sc.missed.push_back(i);
    sc.tickets.push_back(cache.ticket(owner, sc.views[i]));
    sc.slices.emplace_back(sc.views[i].data(), sc.views[i].size());
  }
  if (sc.missed.empty()) return Status::Ok();
  const size_t m = sc.missed.size();
  sc.values.clear();
  sc.values.resize(m);
  sc.statuses.assign(m, rocksdb::Status());
  db_->MultiGet(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), m, sc.slices.data(),
                sc.values.data(), sc.statuses.data());
  Status result;
  for (size_t j = 0; j < m && result.ok(); ++j) {
    if (sc.statuses[j].IsNotFound()) continue;
    if (!sc.statuses[j].ok()) {
      result = Status(Errc::io_error, sc.statuses[j].ToString());
      break;
    }
    const size_t i = sc.missed[j];
    const std::string_view stored(sc.values[j].data(), sc.values[j].size());
    auto live = answer_row(stored, now, out[i]);
    if (!live.ok()) {
      result = live.status();
    } else if (*live) {
      cache.fill(owner, sc.views[i], stored, sc.tickets[j]);
    }
  }
  return result;
}

uint64_t PkState::estimate_rows() const {
  uint64_t n = 0;
  if (auto lk = read_lock()) db_->GetIntProperty("rocksdb.estimate-num-keys", &n);
  return n > 0 ? n - 1 : 0;  // minus the applied-offset key
}

}  // namespace strata::pkindex
