// GroupCoordinator, membership half: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the rebalance
// state machine and its timers. Offsets and admin calls are in group_offsets.cc.
#include "broker/group/group_coordinator.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <random>

#include "protocol/wire/errors.h"

namespace strata::broker::group {

namespace {
using protocol::ErrorCode;

std::string random_uuid() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  uint64_t a = rng(), b = rng();
  char buf[40];
  snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
           static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>((a & 0x0fff) | 0x4000),
           static_cast<unsigned>(((b >> 48) & 0x3fff) | 0x8000),
           static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

JoinResult join_error(ErrorCode error, const std::string& member_id) {
  JoinResult r;
  r.error = error;
  r.member_id = member_id;
  return r;
}

SyncResult sync_error(ErrorCode error) {
  SyncResult r;
  r.error = error;
  return r;
}
}  // namespace

GroupCoordinator::GroupCoordinator(CoordinatorConfig config, Timers& timers, GroupJournal* journal)
    : config_(config), timers_(timers), journal_(journal) {
  if (!journal_) {  // nothing to load: the one partition is served from the start
    owned_[0].state = Ownership::State::loaded;
    owned_[0].wanted = true;
  }
}

GroupCoordinator::~GroupCoordinator() { shutdown(); }

Status GroupCoordinator::start() {
  schedule_retention();
  return Status::Ok();
}

void GroupCoordinator::drop_group(Group& g, ErrorCode pending_error) {
  if (g.join_timer) timers_.cancel(g.join_timer);
  for (auto& [mid, m] : g.members) {
    if (m.session_timer) timers_.cancel(m.session_timer);
    if (m.awaiting_join) {
      deferred_.push_back([cb = std::move(m.awaiting_join), mid = mid, pending_error] {
        cb(join_error(pending_error, mid));
      });
      m.awaiting_join = nullptr;
    }
    if (m.awaiting_sync) {
      deferred_.push_back(
          [cb = std::move(m.awaiting_sync), pending_error] { cb(sync_error(pending_error)); });
      m.awaiting_sync = nullptr;
    }
  }
}

void GroupCoordinator::schedule_retention() {
  timers_.schedule(config_.retention_check_interval_ms, [this] {
    expire_offsets();
    schedule_retention();
  });
}

void GroupCoordinator::shutdown() {
  Locked lk(*this);
  if (stopped_) return;
  stopped_ = true;
  timers_.cancel_all();
  for (auto& [id, g] : groups_) drop_group(g, ErrorCode::not_coordinator);
}

Group* GroupCoordinator::find(const std::string& id) {
  auto it = groups_.find(id);
  return it == groups_.end() || it->second.state == GroupState::dead ? nullptr : &it->second;
}

Group& GroupCoordinator::get_or_create(const std::string& id) {
  Group& g = groups_[id];
  if (g.id.empty() && g.members.empty()) {
    g.id = id;
    g.incarnation = ++next_seq_;
    g.empty_since_ms = timers_.wall_ms();
  }
  return g;
}

void GroupCoordinator::transition(Group& g, GroupState to) {
  if (to == GroupState::empty && g.state != GroupState::empty) g.empty_since_ms = timers_.wall_ms();
  g.state = to;
}

void GroupCoordinator::write(const std::string& group_id, std::vector<JournalRecord> records,
                             std::function<void(ErrorCode, int64_t)> done) {
  if (!journal_) {
    const int64_t offset = next_local_offset_++;
    if (done)
      deferred_.push_back([done = std::move(done), offset] { done(ErrorCode::none, offset); });
    return;
  }
  journal_->append(partition_for(group_id), std::move(records),
                   [done = std::move(done)](ErrorCode e, int64_t offset) {
                     if (done) done(e, offset);
                   });
}

void GroupCoordinator::persist(const Group& g, std::function<void(ErrorCode)> done) {
  if (!g.protocol_type) {  // an offsets-only group has no metadata record
    if (done) deferred_.push_back([done = std::move(done)] { done(ErrorCode::none); });
    return;
  }
  std::vector<JournalRecord> recs;
  recs.push_back({records::group_key(g.id), records::encode_group(g)});
  write(g.id, std::move(recs), [id = g.id, done = std::move(done)](ErrorCode e, int64_t) {
    if (e != ErrorCode::none) {
      spdlog::warn("storing group {} failed: {}", id, protocol::error_name(e));
    }
    if (done) done(e);
  });
}

void GroupCoordinator::write_tombstones(const std::string& group_id,
                                        const std::vector<OffsetKey>& keys, bool group_too,
                                        ErrorCallback done) {
  // In writes of at most ~256 KiB, and within what one batch of the topic may hold (tombstones
  // need no atomicity; one write over the topic's max.message.bytes would be refused whole):
  // `done` gets the first error, after the last.
  const size_t chunk_bytes =
      std::min(size_t{256} << 10, journal_ ? journal_->max_write_bytes() : size_t{256} << 10);
  std::vector<std::vector<JournalRecord>> chunks(1);
  size_t bytes = 0;
  auto add = [&](std::string key) {
    JournalRecord r{std::move(key), std::nullopt};
    const size_t b = encoded_bound(r);
    if (bytes + b > chunk_bytes && !chunks.back().empty()) {
      chunks.emplace_back();
      bytes = 0;
    }
    bytes += b;
    chunks.back().push_back(std::move(r));
  };
  for (const auto& k : keys) add(records::offset_key(k));
  if (group_too) add(records::group_key(group_id));  // last: the group goes once all else did
  if (chunks.back().empty()) {
    if (done) deferred_.push_back([done = std::move(done)] { done(ErrorCode::none); });
    return;
  }
  struct Outcome {
    size_t writes;
    size_t left;
    size_t failed = 0;
    ErrorCode first = ErrorCode::none;
    ErrorCallback done;
  };
  auto outcome = std::make_shared<Outcome>(
      Outcome{chunks.size(), chunks.size(), 0, ErrorCode::none, std::move(done)});
  for (auto& chunk : chunks) {
    // The answers of one partition's writes all come from one thread, so `outcome` needs no lock.
    write(group_id, std::move(chunk), [group_id, outcome](ErrorCode e, int64_t) {
      if (e != ErrorCode::none && outcome->failed++ == 0) outcome->first = e;
      if (--outcome->left > 0) return;
      if (outcome->failed > 0) {  // once per deletion, however many writes it took
        spdlog::warn("tombstones of group {} not written: {} ({} of {} writes failed)", group_id,
                     protocol::error_name(outcome->first), outcome->failed, outcome->writes);
      }
      if (outcome->done) outcome->done(outcome->first);
    });
  }
}

// ---------------------------------------------------------------- JoinGroup

void GroupCoordinator::join(JoinParams p, JoinCallback done) {
  Locked lk(*this);
  auto reply = [this, &done](JoinResult r) {
    deferred_.push_back([cb = std::move(done), r = std::move(r)] { cb(r); });
  };
  if (p.group_id.empty()) return reply(join_error(ErrorCode::invalid_group_id, p.member_id));
  if (ErrorCode e = owner_error(p.group_id); e != ErrorCode::none) {
    return reply(join_error(e, p.member_id));
  }
  if (p.session_timeout_ms < config_.min_session_timeout_ms ||
      p.session_timeout_ms > config_.max_session_timeout_ms) {
    return reply(join_error(ErrorCode::invalid_session_timeout, p.member_id));
  }
  const bool unknown = p.member_id.empty();
  Group* g = find(p.group_id);
  if (!g) {
    if (!unknown) return reply(join_error(ErrorCode::unknown_member_id, p.member_id));
    g = &get_or_create(p.group_id);
  }
  if (!g->supports(p.protocol_type, p.protocols)) {
    return reply(join_error(ErrorCode::inconsistent_group_protocol, p.member_id));
  }
  if (unknown) {
    join_new(*g, p, std::move(done));
  } else {
    join_existing(*g, p, std::move(done));
  }
}

void GroupCoordinator::join_new(Group& g, JoinParams& p, JoinCallback done) {
  std::string id =
      (p.client_id.empty() ? std::string("member") : p.client_id) + "-" + random_uuid();
  if (p.instance_id) {
    auto it = g.static_members.find(*p.instance_id);
    if (it != g.static_members.end() && g.has(it->second)) {
      join_static_known(g, p, it->second, std::move(done));
      return;
    }
    add_member_and_rebalance(g, p, id, std::move(done));
    return;
  }
  if (p.require_known_member_id) {
    // The client must come back with this id; until then it counts as a member still to join.
    uint64_t token = next_token_++;
    g.pending_members[id] = token;
    timers_.schedule(p.session_timeout_ms,
                     [this, gid = g.id, id, token] { on_pending_expired(gid, id, token); });
    deferred_.push_back(
        [cb = std::move(done), id] { cb(join_error(ErrorCode::member_id_required, id)); });
    return;
  }
  add_member_and_rebalance(g, p, id, std::move(done));
}

void GroupCoordinator::join_existing(Group& g, JoinParams& p, JoinCallback done) {
  auto reply = [this, &done](JoinResult r) {
    deferred_.push_back([cb = std::move(done), r = std::move(r)] { cb(r); });
  };
  auto pend = g.pending_members.find(p.member_id);
  if (pend != g.pending_members.end()) {
    g.pending_members.erase(pend);
    add_member_and_rebalance(g, p, p.member_id, std::move(done));
    return;
  }
  if (g.static_fenced(p.instance_id, p.member_id)) {
    return reply(join_error(ErrorCode::fenced_instance_id, p.member_id));
  }
  auto it = g.members.find(p.member_id);
  if (it == g.members.end() || (p.instance_id && it->second.instance_id != p.instance_id)) {
    return reply(join_error(ErrorCode::unknown_member_id, p.member_id));
  }
  Member& m = it->second;
  switch (g.state) {
    case GroupState::preparing_rebalance:
      update_member_and_rebalance(g, m, p, std::move(done));
      return;
    case GroupState::completing_rebalance:
      if (m.protocols == p.protocols) {
        // A retry of a join whose answer was lost: give the current generation again.
        return reply(current_join_result(g, m, g.is_leader(m.member_id)));
      }
      update_member_and_rebalance(g, m, p, std::move(done));
      return;
    case GroupState::stable:
      if (g.is_leader(m.member_id) || m.protocols != p.protocols) {
        update_member_and_rebalance(g, m, p, std::move(done));
        return;
      }
      arm_session(g, m, m.session_timeout_ms);
      return reply(current_join_result(g, m, false));
    case GroupState::empty:
    case GroupState::dead:
      return reply(join_error(ErrorCode::unknown_member_id, p.member_id));
  }
}

// A known group.instance.id joins with an unknown member id: the new process replaces the old
// member. In a Stable group with unchanged metadata this needs no rebalance.
void GroupCoordinator::join_static_known(Group& g, JoinParams& p, const std::string& old_id,
                                         JoinCallback done) {
  std::string new_id =
      (p.client_id.empty() ? std::string("member") : p.client_id) + "-" + random_uuid();
  auto node = g.members.extract(old_id);
  Member m = std::move(node.mapped());
  if (m.awaiting_join) {
    deferred_.push_back([cb = std::move(m.awaiting_join), old_id] {
      cb(join_error(ErrorCode::fenced_instance_id, old_id));
    });
    m.awaiting_join = nullptr;
  }
  if (m.awaiting_sync) {
    deferred_.push_back(
        [cb = std::move(m.awaiting_sync)] { cb(sync_error(ErrorCode::fenced_instance_id)); });
    m.awaiting_sync = nullptr;
  }
  const bool metadata_changed = [&] {
    if (!g.protocol_name) return true;
    const Bytes* before = m.metadata_for(*g.protocol_name);
    for (const auto& [name, md] : p.protocols) {
      if (name == *g.protocol_name) return before == nullptr || *before != md;
    }
    return true;
  }();
  m.member_id = new_id;
  m.client_id = p.client_id;
  m.client_host = p.client_host;
  g.static_members[*p.instance_id] = new_id;
  if (g.is_leader(old_id)) g.leader = new_id;
  Member& nm = g.members.emplace(new_id, std::move(m)).first->second;
  if (g.state == GroupState::stable && !metadata_changed) {
    nm.protocols = p.protocols;
    nm.session_timeout_ms = p.session_timeout_ms;
    nm.rebalance_timeout_ms = p.rebalance_timeout_ms;
    arm_session(g, nm, nm.session_timeout_ms);
    persist(g);
    const bool leader = g.is_leader(new_id);
    JoinResult r = current_join_result(g, nm, leader && p.supports_skip_assignment);
    r.skip_assignment = leader && p.supports_skip_assignment;
    deferred_.push_back([cb = std::move(done), r = std::move(r)] { cb(r); });
    return;
  }
  update_member_and_rebalance(g, nm, p, std::move(done));
}

void GroupCoordinator::add_member_and_rebalance(Group& g, JoinParams& p, const std::string& id,
                                                JoinCallback done) {
  Member m;
  m.member_id = id;
  m.instance_id = p.instance_id;
  m.client_id = p.client_id;
  m.client_host = p.client_host;
  m.session_timeout_ms = p.session_timeout_ms;
  m.rebalance_timeout_ms = p.rebalance_timeout_ms;
  m.protocol_type = p.protocol_type;
  m.protocols = p.protocols;
  m.awaiting_join = std::move(done);
  m.is_new = true;
  if (g.members.empty()) g.protocol_type = p.protocol_type;
  if (!g.leader) g.leader = id;
  if (p.instance_id) g.static_members[*p.instance_id] = id;
  Member& nm = g.members.emplace(id, std::move(m)).first->second;
  arm_session(g, nm, nm.session_timeout_ms);
  if (g.state == GroupState::preparing_rebalance) g.new_member_added = true;
  maybe_prepare_rebalance(g, "member " + id + " joined");
}

void GroupCoordinator::update_member_and_rebalance(Group& g, Member& m, JoinParams& p,
                                                   JoinCallback done) {
  m.protocols = p.protocols;
  m.session_timeout_ms = p.session_timeout_ms;
  m.rebalance_timeout_ms = p.rebalance_timeout_ms;
  if (m.awaiting_join) {
    deferred_.push_back([cb = std::move(m.awaiting_join), id = m.member_id] {
      cb(join_error(ErrorCode::rebalance_in_progress, id));
    });
  }
  m.awaiting_join = std::move(done);
  maybe_prepare_rebalance(g, "member " + m.member_id + " rejoined");
}

void GroupCoordinator::maybe_prepare_rebalance(Group& g, const std::string& reason) {
  if (g.state == GroupState::preparing_rebalance) {
    try_complete_join(g);
  } else if (g.state != GroupState::dead) {
    prepare_rebalance(g, reason);
  }
}

void GroupCoordinator::prepare_rebalance(Group& g, const std::string& reason) {
  if (g.state == GroupState::completing_rebalance) {
    reset_and_propagate(g, ErrorCode::rebalance_in_progress);
  }
  const bool was_empty = g.state == GroupState::empty;
  transition(g, GroupState::preparing_rebalance);
  spdlog::info("group {} preparing rebalance (generation {}): {}", g.id, g.generation, reason);
  const int64_t timeout = g.max_rebalance_timeout();
  if (was_empty) {
    g.initial_delay = true;
    g.new_member_added = false;
    const int64_t delay = std::min<int64_t>(config_.initial_rebalance_delay_ms, timeout);
    g.initial_delay_remaining_ms =
        std::max<int64_t>(timeout - config_.initial_rebalance_delay_ms, 0);
    arm_join_timer(g, delay);
  } else {
    g.initial_delay = false;
    arm_join_timer(g, timeout);
    try_complete_join(g);
  }
}

void GroupCoordinator::arm_join_timer(Group& g, int64_t delay_ms) {
  if (g.join_timer) timers_.cancel(g.join_timer);
  uint64_t token = next_token_++;
  g.join_token = token;
  g.join_timer =
      timers_.schedule(delay_ms, [this, gid = g.id, token] { on_join_timer(gid, token); });
}

void GroupCoordinator::on_join_timer(const std::string& group_id, uint64_t token) {
  Locked lk(*this);
  Group* g = find(group_id);
  if (!g || g->join_token != token || g->state != GroupState::preparing_rebalance) return;
  g->join_timer = 0;
  if (g->initial_delay && g->new_member_added && g->initial_delay_remaining_ms > 0) {
    // More members arrived during the initial delay: wait a little longer (bounded).
    g->new_member_added = false;
    int64_t delay =
        std::min<int64_t>(config_.initial_rebalance_delay_ms, g->initial_delay_remaining_ms);
    g->initial_delay_remaining_ms =
        std::max<int64_t>(g->initial_delay_remaining_ms - config_.initial_rebalance_delay_ms, 0);
    arm_join_timer(*g, delay);
    return;
  }
  g->initial_delay = false;
  complete_join(*g);
}

void GroupCoordinator::try_complete_join(Group& g) {
  if (g.state == GroupState::preparing_rebalance && !g.initial_delay && g.all_joined()) {
    complete_join(g);
  }
}

void GroupCoordinator::complete_join(Group& g) {
  if (g.join_timer) timers_.cancel(g.join_timer);
  g.join_timer = 0;
  g.join_token = 0;
  // Dynamic members that did not rejoin in time are out; static ones stay until their session ends.
  std::vector<std::string> gone;
  for (const auto& [id, m] : g.members) {
    if (!m.awaiting_join && !m.instance_id) gone.push_back(id);
  }
  for (const auto& id : gone) remove_member(g, id, ErrorCode::unknown_member_id);
  bool any_joined = false;
  for (const auto& [id, m] : g.members) any_joined |= static_cast<bool>(m.awaiting_join);
  if (!g.members.empty() && !any_joined) {
    // Only absent static members: wait for their sessions to expire or for them to rejoin.
    arm_join_timer(g, g.max_rebalance_timeout());
    return;
  }
  if (g.leader && (!g.has(*g.leader) || !g.members.at(*g.leader).awaiting_join)) g.leader.reset();
  if (!g.leader) {
    for (const auto& [id, m] : g.members) {
      if (m.awaiting_join) {
        g.leader = id;
        break;
      }
    }
  }
  ++g.generation;
  if (g.members.empty()) {
    g.protocol_name.reset();
    g.leader.reset();
    transition(g, GroupState::empty);
    spdlog::info("group {} is empty (generation {})", g.id, g.generation);
    persist(g);
    return;
  }
  g.protocol_name = g.select_protocol();
  transition(g, GroupState::completing_rebalance);
  spdlog::info("group {} generation {} with {} members, protocol {}, leader {}", g.id, g.generation,
               g.members.size(), *g.protocol_name, *g.leader);
  for (auto& [id, m] : g.members) {
    if (!m.awaiting_join) continue;
    JoinResult r = current_join_result(g, m, g.is_leader(id));
    deferred_.push_back([cb = std::move(m.awaiting_join), r = std::move(r)] { cb(r); });
    m.awaiting_join = nullptr;
    m.is_new = false;
    arm_session(g, m, m.session_timeout_ms);
  }
}

JoinResult GroupCoordinator::current_join_result(const Group& g, const Member& m,
                                                 bool include_members) const {
  JoinResult r;
  r.generation = g.generation;
  r.protocol_type = g.protocol_type;
  r.protocol_name = g.protocol_name;
  r.leader = g.leader.value_or("");
  r.member_id = m.member_id;
  if (include_members) r.members = member_list(g);
  return r;
}

std::vector<JoinMember> GroupCoordinator::member_list(const Group& g) const {
  std::vector<JoinMember> out;
  for (const auto& [id, m] : g.members) {
    JoinMember jm;
    jm.member_id = id;
    jm.instance_id = m.instance_id;
    if (g.protocol_name) {
      if (const Bytes* md = m.metadata_for(*g.protocol_name)) jm.metadata = *md;
    }
    out.push_back(std::move(jm));
  }
  return out;
}

// ---------------------------------------------------------------- SyncGroup

void GroupCoordinator::sync(SyncParams p, SyncCallback done) {
  Locked lk(*this);
  auto reply = [this, &done](SyncResult r) {
    deferred_.push_back([cb = std::move(done), r = std::move(r)] { cb(r); });
  };
  if (p.group_id.empty()) return reply(sync_error(ErrorCode::invalid_group_id));
  if (ErrorCode e = owner_error(p.group_id); e != ErrorCode::none) return reply(sync_error(e));
  Group* g = find(p.group_id);
  if (!g) return reply(sync_error(ErrorCode::unknown_member_id));
  if (g->static_fenced(p.instance_id, p.member_id)) {
    return reply(sync_error(ErrorCode::fenced_instance_id));
  }
  auto it = g->members.find(p.member_id);
  if (it == g->members.end()) return reply(sync_error(ErrorCode::unknown_member_id));
  if (p.generation != g->generation) return reply(sync_error(ErrorCode::illegal_generation));
  if ((p.protocol_type && g->protocol_type != p.protocol_type) ||
      (p.protocol_name && g->protocol_name != p.protocol_name)) {
    return reply(sync_error(ErrorCode::inconsistent_group_protocol));
  }
  Member& m = it->second;
  switch (g->state) {
    case GroupState::empty:
    case GroupState::dead:
      return reply(sync_error(ErrorCode::unknown_member_id));
    case GroupState::preparing_rebalance:
      return reply(sync_error(ErrorCode::rebalance_in_progress));
    case GroupState::completing_rebalance: {
      if (m.awaiting_sync) {
        deferred_.push_back([cb = std::move(m.awaiting_sync)] {
          cb(sync_error(ErrorCode::rebalance_in_progress));
        });
      }
      m.awaiting_sync = std::move(done);
      arm_session(*g, m, m.session_timeout_ms);
      if (g->is_leader(m.member_id)) {
        for (auto& [id, mem] : g->members) mem.assignment.clear();
        for (auto& [id, a] : p.assignments) {
          auto mi = g->members.find(id);
          if (mi != g->members.end()) mi->second.assignment = std::move(a);
        }
        // Answered once the assignment is durable, as Kafka does: a coordinator that fails
        // over right after must not hand out a generation it cannot describe.
        persist(*g, [this, id = g->id, gen = g->generation](ErrorCode e) {
          Locked relk(*this);
          Group* rg = find(id);
          if (!rg || rg->generation != gen || rg->state != GroupState::completing_rebalance) {
            return;  // the group moved on (a new rebalance answered the waiting syncs)
          }
          if (e != ErrorCode::none) {
            reset_and_propagate(*rg, e);
            maybe_prepare_rebalance(*rg, "storing the assignment failed");
            return;
          }
          propagate_assignment(*rg);
          transition(*rg, GroupState::stable);
        });
      }
      return;
    }
    case GroupState::stable: {
      arm_session(*g, m, m.session_timeout_ms);
      SyncResult r;
      r.protocol_type = g->protocol_type;
      r.protocol_name = g->protocol_name;
      r.assignment = m.assignment;
      return reply(std::move(r));
    }
  }
}

void GroupCoordinator::propagate_assignment(Group& g) {
  for (auto& [id, m] : g.members) {
    if (!m.awaiting_sync) continue;
    SyncResult r;
    r.protocol_type = g.protocol_type;
    r.protocol_name = g.protocol_name;
    r.assignment = m.assignment;
    deferred_.push_back([cb = std::move(m.awaiting_sync), r = std::move(r)] { cb(r); });
    m.awaiting_sync = nullptr;
    arm_session(g, m, m.session_timeout_ms);
  }
}

void GroupCoordinator::reset_and_propagate(Group& g, ErrorCode error) {
  for (auto& [id, m] : g.members) {
    m.assignment.clear();
    if (!m.awaiting_sync) continue;
    deferred_.push_back([cb = std::move(m.awaiting_sync), error] { cb(sync_error(error)); });
    m.awaiting_sync = nullptr;
    arm_session(g, m, m.session_timeout_ms);
  }
}

// ---------------------------------------------------------------- Heartbeat / LeaveGroup

ErrorCode GroupCoordinator::heartbeat(const std::string& group_id, const std::string& member_id,
                                      const std::optional<std::string>& instance_id,
                                      int32_t generation) {
  Locked lk(*this);
  if (group_id.empty()) return ErrorCode::invalid_group_id;
  if (ErrorCode e = owner_error(group_id); e != ErrorCode::none) return e;
  Group* g = find(group_id);
  if (!g) return ErrorCode::unknown_member_id;
  if (g->static_fenced(instance_id, member_id)) return ErrorCode::fenced_instance_id;
  auto it = g->members.find(member_id);
  if (it == g->members.end()) return ErrorCode::unknown_member_id;
  if (generation != g->generation) return ErrorCode::illegal_generation;
  switch (g->state) {
    case GroupState::empty:
    case GroupState::dead:
      return ErrorCode::unknown_member_id;
    case GroupState::preparing_rebalance:
      arm_session(*g, it->second, it->second.session_timeout_ms);
      return ErrorCode::rebalance_in_progress;
    case GroupState::completing_rebalance:
    case GroupState::stable:
      arm_session(*g, it->second, it->second.session_timeout_ms);
      return ErrorCode::none;
  }
  return ErrorCode::none;
}

LeaveResult GroupCoordinator::leave(const std::string& group_id,
                                    const std::vector<LeaveRequestMember>& members) {
  Locked lk(*this);
  LeaveResult out;
  if (group_id.empty()) {
    out.error = ErrorCode::invalid_group_id;
    return out;
  }
  if (ErrorCode e = owner_error(group_id); e != ErrorCode::none) {
    out.error = e;
    return out;
  }
  Group* g = find(group_id);
  for (const auto& lm : members) {
    ErrorCode err = ErrorCode::none;
    if (!g) {
      err = ErrorCode::unknown_member_id;
    } else if (lm.member_id.empty()) {
      // Static member leaving by instance id only.
      auto si = lm.instance_id ? g->static_members.find(*lm.instance_id) : g->static_members.end();
      if (si == g->static_members.end() || !g->has(si->second)) {
        err = ErrorCode::unknown_member_id;
      } else {
        const std::string member = si->second;  // remove_member erases the map entry
        remove_member_and_update(*g, member, "static member left");
      }
    } else if (g->static_fenced(lm.instance_id, lm.member_id)) {
      err = ErrorCode::fenced_instance_id;
    } else if (g->pending_members.erase(lm.member_id)) {
      if (g->state == GroupState::preparing_rebalance) try_complete_join(*g);
    } else if (!g->has(lm.member_id)) {
      err = ErrorCode::unknown_member_id;
    } else {
      remove_member_and_update(*g, lm.member_id, "member left");
    }
    out.member_errors.push_back(err);
  }
  return out;
}

void GroupCoordinator::remove_member(Group& g, const std::string& member_id,
                                     ErrorCode pending_error) {
  auto it = g.members.find(member_id);
  if (it == g.members.end()) return;
  Member& m = it->second;
  if (m.awaiting_join) {
    deferred_.push_back([cb = std::move(m.awaiting_join), member_id, pending_error] {
      cb(join_error(pending_error, member_id));
    });
  }
  if (m.awaiting_sync) {
    deferred_.push_back(
        [cb = std::move(m.awaiting_sync), pending_error] { cb(sync_error(pending_error)); });
  }
  if (m.session_timer) timers_.cancel(m.session_timer);
  if (m.instance_id) {
    auto si = g.static_members.find(*m.instance_id);
    if (si != g.static_members.end() && si->second == member_id) g.static_members.erase(si);
  }
  g.members.erase(it);
  if (g.is_leader(member_id)) {
    g.leader.reset();
    if (!g.members.empty()) g.leader = g.members.begin()->first;
  }
}

void GroupCoordinator::remove_member_and_update(Group& g, const std::string& member_id,
                                                const std::string& reason) {
  remove_member(g, member_id, ErrorCode::unknown_member_id);
  switch (g.state) {
    case GroupState::stable:
    case GroupState::completing_rebalance:
      maybe_prepare_rebalance(g, reason + ": " + member_id);
      break;
    case GroupState::preparing_rebalance:
      try_complete_join(g);
      break;
    case GroupState::empty:
    case GroupState::dead:
      break;
  }
}

void GroupCoordinator::arm_session(Group& g, Member& m, int64_t timeout_ms) {
  if (m.session_timer) timers_.cancel(m.session_timer);
  uint64_t token = next_token_++;
  m.session_token = token;
  m.session_timer = timers_.schedule(timeout_ms, [this, gid = g.id, mid = m.member_id, token] {
    on_session_expired(gid, mid, token);
  });
}

void GroupCoordinator::on_session_expired(const std::string& group_id, const std::string& member_id,
                                          uint64_t token) {
  Locked lk(*this);
  Group* g = find(group_id);
  if (!g) return;
  auto it = g->members.find(member_id);
  if (it == g->members.end() || it->second.session_token != token) return;
  it->second.session_timer = 0;
  if (it->second.awaiting_join || it->second.awaiting_sync) {
    // A member waiting for the rebalance to finish is alive by definition.
    arm_session(*g, it->second, it->second.session_timeout_ms);
    return;
  }
  spdlog::info("group {}: member {} session expired", group_id, member_id);
  remove_member_and_update(*g, member_id, "session timeout");
}

void GroupCoordinator::on_pending_expired(const std::string& group_id, const std::string& member_id,
                                          uint64_t token) {
  Locked lk(*this);
  Group* g = find(group_id);
  if (!g) return;
  auto it = g->pending_members.find(member_id);
  if (it == g->pending_members.end() || it->second != token) return;
  g->pending_members.erase(it);
  try_complete_join(*g);
}

std::optional<GroupState> GroupCoordinator::state_of(const std::string& group_id) {
  Locked lk(*this);
  Group* g = find(group_id);
  if (!g) return std::nullopt;
  return g->state;
}

int32_t GroupCoordinator::generation_of(const std::string& group_id) {
  Locked lk(*this);
  Group* g = find(group_id);
  return g ? g->generation : -1;
}

}  // namespace strata::broker::group
