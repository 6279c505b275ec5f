// Controller: at most one broker at a time holds `{prefix}/controller` (bound to its membership
// lease) and keeps every partition's state right for the live brokers — it re-elects leaders and
// prunes ISRs with the rules of elections.h whenever the view changes, and finishes partition
// reassignments (reassignment.h) once their target replicas are in sync. Each new controller bumps
// `{prefix}/controller_epoch`, and every write it makes compares the controller key's
// mod_revision, so a controller that lost its lease (paused, partitioned) cannot write after its
// successor took over.
// Topic creation and deletion do not go through the controller: any broker writes them with
// compare-and-swap (topic_admin.h), so CreateTopics needs no forwarding.
// Every broker runs one; the others wait for the controller key to go and campaign then.
// Thread-safe; the work runs on the controller's own thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "broker/cluster/coordination.h"
#include "broker/cluster/metadata_view.h"

namespace strata::broker::cluster {

class Controller {
 public:
  struct Options {
    bool unclean_leader_election = false;
    std::function<int64_t()> lease;  // the membership lease to bind the controller key to
  };
  Controller(Coordination& coordination, Layout layout, MetadataView& view, int32_t self_id,
             Options options);
  ~Controller();

  void start();
  void stop();

  bool active() const { return active_epoch_.load() > 0; }
  int64_t epoch() const { return active_epoch_.load(); }
  // Partition writes that lost a compare-and-swap race (counted; retried on the next view).
  uint64_t lost_races() const { return lost_races_.load(); }
  uint64_t partition_changes() const { return partition_changes_.load(); }
  // Reassignments this controller finished (replicas = target once every target was in sync).
  uint64_t reassignments_completed() const { return reassignments_completed_.load(); }

 private:
  void loop();
  void campaign(const ClusterSnapshot& s);
  void reconcile(const ClusterSnapshot& s);
  // Writes the final state of every reassignment whose target replicas are all in sync; returns
  // the partitions it wrote (or tried to), which the rest of this pass leaves alone.
  std::set<std::pair<std::string, int32_t>> complete_reassignments(const ClusterSnapshot& s);

  Coordination& coordination_;
  const Layout layout_;
  MetadataView& view_;
  const int32_t self_;
  const Options options_;
  std::atomic<int64_t> active_epoch_{0};
  int64_t my_controller_revision_ = 0;  // loop thread only
  std::atomic<uint64_t> lost_races_{0};
  std::atomic<uint64_t> partition_changes_{0};
  std::atomic<uint64_t> reassignments_completed_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<const ClusterSnapshot> pending_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace strata::broker::cluster
