// GroupCoordinator, offsets and admin half: OffsetCommit/OffsetFetch/OffsetDelete, DescribeGroups,
// ListGroups, DeleteGroups, topic deletion and offset retention.
#include <spdlog/spdlog.h>

#include "broker/group/consumer_protocol.h"
#include "broker/group/group_coordinator.h"
#include "protocol/wire/errors.h"

namespace strata::broker::group {

namespace {
using protocol::ErrorCode;
}  // namespace

void GroupCoordinator::commit(const std::string& group_id, int32_t generation,
                              const std::string& member_id,
                              const std::optional<std::string>& instance_id, int64_t retention_ms,
                              std::vector<CommitPartition> parts, CommitCallback done) {
  Locked lk(*this);
  auto finish = [&](std::optional<ErrorCode> e) {
    if (e) {
      for (auto& p : parts) {
        if (p.error == ErrorCode::none) p.error = *e;
      }
    }
    deferred_.push_back(
        [done = std::move(done), parts = std::move(parts)]() mutable { done(std::move(parts)); });
  };
  if (group_id.empty()) return finish(ErrorCode::invalid_group_id);
  if (ErrorCode e = owner_error(group_id); e != ErrorCode::none) return finish(e);
  Group* g = find(group_id);
  if (!g) {
    if (generation >= 0) return finish(ErrorCode::illegal_generation);
    g = &get_or_create(group_id);  // a group that only stores offsets
  }
  if (g->static_fenced(instance_id, member_id)) return finish(ErrorCode::fenced_instance_id);
  if (!(generation < 0 && g->state == GroupState::empty)) {
    auto it = g->members.find(member_id);
    if (it == g->members.end()) return finish(ErrorCode::unknown_member_id);
    if (generation != g->generation) return finish(ErrorCode::illegal_generation);
    if (g->state == GroupState::completing_rebalance) {
      return finish(ErrorCode::rebalance_in_progress);
    }
    arm_session(*g, it->second, it->second.session_timeout_ms);
  }
  write_offsets(group_id, retention_ms, std::move(parts), std::move(done));
}

void GroupCoordinator::commit_transactional(const std::string& group_id,
                                            std::vector<CommitPartition> parts,
                                            CommitCallback done) {
  Locked lk(*this);
  ErrorCode e = group_id.empty() ? ErrorCode::invalid_group_id : owner_error(group_id);
  if (e != ErrorCode::none) {
    for (auto& p : parts) {
      if (p.error == ErrorCode::none) p.error = e;
    }
    deferred_.push_back(
        [done = std::move(done), parts = std::move(parts)]() mutable { done(std::move(parts)); });
    return;
  }
  if (!find(group_id)) get_or_create(group_id);  // a group that only stores offsets
  write_offsets(group_id, -1, std::move(parts), std::move(done));
}

void GroupCoordinator::write_offsets(const std::string& group_id, int64_t retention_ms,
                                     std::vector<CommitPartition> parts, CommitCallback done) {
  auto finish = [&]() {
    deferred_.push_back(
        [done = std::move(done), parts = std::move(parts)]() mutable { done(std::move(parts)); });
  };
  const int64_t now = timers_.wall_ms();
  std::vector<std::pair<size_t, OffsetEntry>> batch;  // index into parts
  std::vector<JournalRecord> recs;
  for (size_t i = 0; i < parts.size(); ++i) {
    auto& p = parts[i];
    if (p.error != ErrorCode::none) continue;
    if (p.metadata &&
        static_cast<int64_t>(p.metadata->size()) > config_.offset_metadata_max_bytes) {
      p.error = ErrorCode::offset_metadata_too_large;
      continue;
    }
    OffsetEntry e;
    e.offset = p.offset;
    e.leader_epoch = p.leader_epoch;
    e.metadata = p.metadata.value_or("");
    e.commit_ms = now;
    e.expire_ms = retention_ms >= 0 ? now + retention_ms : -1;
    recs.push_back(
        {records::offset_key({group_id, p.topic, p.partition}), records::encode_offset(e)});
    batch.emplace_back(i, std::move(e));
  }
  if (batch.empty()) return finish();
  // Visible to OffsetFetch once durable, and only while this broker still owns the partition.
  const uint64_t token = owned_.at(partition_for(group_id)).token;  // owned: checked above
  Group& queued_for = get_or_create(group_id);
  const uint64_t incarnation = queued_for.incarnation;
  const uint64_t seq = ++next_seq_;
  for (auto& [i, entry] : batch) ++queued_for.pending_offsets[{parts[i].topic, parts[i].partition}];
  write(
      group_id, std::move(recs),
      [this, token, group_id, incarnation, seq, batch = std::move(batch), parts = std::move(parts),
       done = std::move(done)](ErrorCode e, int64_t last_offset) mutable {
        {
          Locked relk(*this);
          auto o = owned_.find(partition_for(group_id));
          if (e == ErrorCode::none && (o == owned_.end() || o->second.token != token ||
                                       o->second.state != Ownership::State::loaded)) {
            e = ErrorCode::not_coordinator;
          }
          // Deleted (and maybe created again) since: the deletion's tombstones cover this write.
          Group* g = find(group_id);
          if (g && g->incarnation != incarnation) g = nullptr;
          if (e != ErrorCode::none) {
            spdlog::warn("committing offsets of group {} failed: {}", group_id,
                         protocol::error_name(e));
            for (auto& [i, entry] : batch) parts[i].error = e;
          }
          if (g) {
            for (auto& [i, entry] : batch) {
              const std::pair<std::string, int32_t> key{parts[i].topic, parts[i].partition};
              auto deleted = g->deleted_at.find(key);
              if (e == ErrorCode::none &&
                  (deleted == g->deleted_at.end() || deleted->second < seq)) {
                OffsetEntry& slot = g->offsets[key];
                if (slot.log_offset <= last_offset) {  // else a newer commit completed first
                  entry.log_offset = last_offset;
                  slot = std::move(entry);
                }
              }
              auto pending = g->pending_offsets.find(key);
              if (pending != g->pending_offsets.end() && --pending->second == 0) {
                g->pending_offsets.erase(pending);
              }
            }
            if (g->pending_offsets.empty()) g->deleted_at.clear();  // no write from before
          }
        }
        done(std::move(parts));
      });
}

ErrorCode GroupCoordinator::fetch_offsets(
    const std::string& group_id,
    const std::optional<std::vector<std::pair<std::string, std::vector<int32_t>>>>& requested,
    std::vector<FetchedPartition>& out) {
  std::lock_guard l(mu_);
  if (ErrorCode e = owner_error(group_id); e != ErrorCode::none) return e;
  Group* g = find(group_id);
  auto fill = [](FetchedPartition& fp, const OffsetEntry& e) {
    fp.offset = e.offset;
    fp.leader_epoch = e.leader_epoch;
    fp.metadata = e.metadata;
  };
  if (!requested) {
    if (!g) return ErrorCode::none;
    for (const auto& [tp, e] : g->offsets) {
      FetchedPartition fp;
      fp.topic = tp.first;
      fp.partition = tp.second;
      fill(fp, e);
      out.push_back(std::move(fp));
    }
    return ErrorCode::none;
  }
  for (const auto& [topic, partitions] : *requested) {
    for (int32_t p : partitions) {
      FetchedPartition fp;
      fp.topic = topic;
      fp.partition = p;
      if (g) {
        auto it = g->offsets.find({topic, p});
        if (it != g->offsets.end()) fill(fp, it->second);
      }
      out.push_back(std::move(fp));
    }
  }
  return ErrorCode::none;
}

GroupSummary GroupCoordinator::describe(const std::string& group_id) {
  std::lock_guard l(mu_);
  GroupSummary s;
  if (ErrorCode e = owner_error(group_id); e != ErrorCode::none) {
    s.error = e;
    return s;
  }
  Group* g = find(group_id);
  if (!g) {
    s.state = state_name(GroupState::dead);
    return s;
  }
  s.state = state_name(g->state);
  s.protocol_type = g->protocol_type.value_or("");
  const bool stable = g->state == GroupState::stable;
  if (stable) s.protocol_data = g->protocol_name.value_or("");
  for (const auto& [id, m] : g->members) {
    MemberSummary ms;
    ms.member_id = id;
    ms.instance_id = m.instance_id;
    ms.client_id = m.client_id;
    ms.client_host = m.client_host;
    if (stable) {
      if (const Bytes* md = m.metadata_for(s.protocol_data)) ms.metadata = *md;
      ms.assignment = m.assignment;
    }
    s.members.push_back(std::move(ms));
  }
  return s;
}

std::vector<ListedGroup> GroupCoordinator::list() {
  std::lock_guard l(mu_);
  std::vector<ListedGroup> out;
  for (const auto& [id, g] : groups_) {
    if (g.state == GroupState::dead) continue;
    out.push_back({id, g.protocol_type.value_or(""), state_name(g.state)});
  }
  return out;
}

void GroupCoordinator::delete_group(const std::string& group_id, ErrorCallback done) {
  Locked lk(*this);
  auto reply = [&](ErrorCode e) { deferred_.push_back([done = std::move(done), e] { done(e); }); };
  if (ErrorCode e = owner_error(group_id); e != ErrorCode::none) return reply(e);
  Group* g = find(group_id);
  if (!g) return reply(ErrorCode::group_id_not_found);
  if (g->state != GroupState::empty) return reply(ErrorCode::non_empty_group);
  // Offsets still being written too: their records are in the log before these tombstones.
  std::vector<OffsetKey> keys;
  for (const auto& [tp, e] : g->offsets) keys.push_back({group_id, tp.first, tp.second});
  for (const auto& [tp, n] : g->pending_offsets) {
    if (!g->offsets.count(tp)) keys.push_back({group_id, tp.first, tp.second});
  }
  write_tombstones(group_id, keys, true, std::move(done));
  if (g->join_timer) timers_.cancel(g->join_timer);
  groups_.erase(group_id);
  spdlog::info("deleted group {}", group_id);
}

void GroupCoordinator::delete_offsets(const std::string& group_id,
                                      std::vector<TopicPartitionError> parts,
                                      DeleteOffsetsCallback done) {
  Locked lk(*this);
  auto reply = [&](ErrorCode e) {
    deferred_.push_back([done = std::move(done), e, parts = std::move(parts)]() mutable {
      done(e, std::move(parts));
    });
  };
  if (group_id.empty()) return reply(ErrorCode::invalid_group_id);
  if (ErrorCode e = owner_error(group_id); e != ErrorCode::none) return reply(e);
  Group* g = find(group_id);
  if (!g) return reply(ErrorCode::group_id_not_found);
  std::vector<std::string> subscribed;
  bool all_subscribed = false;
  if (g->state != GroupState::empty) {
    if (g->protocol_type != std::string(kConsumerProtocolType)) {
      return reply(ErrorCode::non_empty_group);
    }
    bool known = false;
    subscribed = subscribed_topics(*g, known);
    all_subscribed = !known;
  }
  std::vector<OffsetKey> keys;
  for (auto& p : parts) {
    if (p.error != ErrorCode::none) continue;
    if (g->state != GroupState::empty &&
        (all_subscribed ||
         std::find(subscribed.begin(), subscribed.end(), p.topic) != subscribed.end())) {
      p.error = ErrorCode::group_subscribed_to_topic;
      continue;
    }
    const std::pair<std::string, int32_t> key{p.topic, p.partition};
    if (g->pending_offsets.count(key)) {
      g->deleted_at[key] = ++next_seq_;  // a commit answered after this must not bring it back
    } else if (!g->offsets.count(key)) {
      continue;
    }
    keys.push_back({group_id, p.topic, p.partition});
  }
  for (const auto& k : keys) g->offsets.erase({k.topic, k.partition});
  write_tombstones(group_id, keys, false,
                   [done = std::move(done), parts = std::move(parts)](ErrorCode e) mutable {
                     done(e, std::move(parts));
                   });
}

std::vector<std::string> GroupCoordinator::subscribed_topics(const Group& g, bool& known) const {
  std::vector<std::string> out;
  known = false;
  if (!g.protocol_name) return out;
  for (const auto& [id, m] : g.members) {
    const Bytes* md = m.metadata_for(*g.protocol_name);
    if (!md) return out;
    auto topics = parse_subscription_topics(*md);
    if (!topics) return out;
    for (auto& t : *topics) {
      if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(std::move(t));
    }
  }
  known = true;
  return out;
}

void GroupCoordinator::on_topic_deleted(const std::string& topic) {
  Locked lk(*this);
  for (auto& [id, g] : groups_) {
    std::vector<OffsetKey> keys;
    for (const auto& [tp, e] : g.offsets) {
      if (tp.first == topic) keys.push_back({id, tp.first, tp.second});
    }
    if (keys.empty()) continue;
    write_tombstones(id, keys, false);
    for (const auto& k : keys) g.offsets.erase({k.topic, k.partition});
  }
}

void GroupCoordinator::expire_offsets() {
  Locked lk(*this);
  if (stopped_) return;
  const int64_t now = timers_.wall_ms();
  std::vector<std::string> dead;
  size_t expired = 0;
  for (auto& [id, g] : groups_) {
    if (g.state != GroupState::empty) continue;
    std::vector<OffsetKey> keys;
    for (const auto& [tp, e] : g.offsets) {
      // Consumer groups count from when they became empty; offsets-only groups from the commit.
      const int64_t base = g.protocol_type ? std::max(g.empty_since_ms, e.commit_ms) : e.commit_ms;
      const bool gone =
          e.expire_ms >= 0 ? now >= e.expire_ms : now - base >= config_.offsets_retention_ms;
      if (gone) keys.push_back({id, tp.first, tp.second});
    }
    expired += keys.size();
    for (const auto& k : keys) g.offsets.erase({k.topic, k.partition});
    // A group whose first commit is still being written stays: that commit lands in it.
    const bool gone = g.offsets.empty() && g.members.empty() && g.pending_offsets.empty();
    write_tombstones(id, keys, gone);
    if (gone) dead.push_back(id);
  }
  for (const auto& id : dead) {
    Group& g = groups_[id];
    if (g.join_timer) timers_.cancel(g.join_timer);
    groups_.erase(id);
  }
  if (expired || !dead.empty()) {
    spdlog::info("offset retention: expired {} offsets, removed {} empty groups", expired,
                 dead.size());
  }
}

}  // namespace strata::broker::group
