#include "broker/group/group.h"

#include <algorithm>

namespace strata::broker::group {

const char* state_name(GroupState s) {
  switch (s) {
    case GroupState::empty:
      return "Empty";
    case GroupState::preparing_rebalance:
      return "PreparingRebalance";
    case GroupState::completing_rebalance:
      return "CompletingRebalance";
    case GroupState::stable:
      return "Stable";
    case GroupState::dead:
      return "Dead";
  }
  return "Dead";
}

const Bytes* Member::metadata_for(const std::string& protocol) const {
  for (const auto& [name, md] : protocols) {
    if (name == protocol) return &md;
  }
  return nullptr;
}

bool Group::static_fenced(const std::optional<std::string>& instance_id,
                          const std::string& member_id) const {
  if (!instance_id) return false;
  auto it = static_members.find(*instance_id);
  return it != static_members.end() && it->second != member_id;
}

bool Group::all_joined() const {
  if (!pending_members.empty()) return false;
  for (const auto& [id, m] : members) {
    if (!m.awaiting_join) return false;
  }
  return true;
}

int32_t Group::max_rebalance_timeout() const {
  int32_t t = 0;
  for (const auto& [id, m] : members) t = std::max(t, m.rebalance_timeout_ms);
  return t;
}

bool Group::supports(const std::string& type,
                     const std::vector<std::pair<std::string, Bytes>>& protocols) const {
  if (members.empty()) return !type.empty() && !protocols.empty();
  if (!protocol_type || *protocol_type != type) return false;
  for (const auto& protocol : protocols) {
    const std::string& name = protocol.first;  // (clang 14 cannot capture structured bindings)
    bool all = std::all_of(members.begin(), members.end(),
                           [&](const auto& kv) { return kv.second.metadata_for(name) != nullptr; });
    if (all) return true;
  }
  return false;
}

std::string Group::select_protocol() const {
  // Candidates: supported by every member. Each member votes for its first candidate.
  std::vector<std::string> candidates;
  if (members.empty()) return "";
  for (const auto& protocol : members.begin()->second.protocols) {
    const std::string& name = protocol.first;
    bool all = std::all_of(members.begin(), members.end(),
                           [&](const auto& kv) { return kv.second.metadata_for(name) != nullptr; });
    if (all) candidates.push_back(name);
  }
  if (candidates.empty()) return "";
  std::map<std::string, int> votes;
  for (const auto& [id, m] : members) {
    for (const auto& [name, md] : m.protocols) {
      if (std::find(candidates.begin(), candidates.end(), name) != candidates.end()) {
        ++votes[name];
        break;
      }
    }
  }
  std::string best = candidates.front();
  for (const auto& c : candidates) {
    if (votes[c] > votes[best]) best = c;
  }
  return best;
}

}  // namespace strata::broker::group
