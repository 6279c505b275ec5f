// ListTransactions' filters (broker/txn/txn_listing.h): state names as Kafka spells them, producer
// ids, the duration bound, and unknown state names reported back and matching nothing; and the
// coordinator's list() that they filter.
#include "broker/txn/txn_listing.h"

#include <gtest/gtest.h>

#include "broker/txn/txn_coordinator.h"

namespace strata::broker::txn {
namespace {

TxnMetadata meta(TxnState s, int64_t pid, int64_t started_ms = -1) {
  TxnMetadata m;
  m.state = s;
  m.producer_id = pid;
  m.started_ms = started_ms;
  return m;
}

TEST(TxnListing, StateNamesRoundTripAndAreCaseSensitive) {
  for (TxnState s :
       {TxnState::empty, TxnState::ongoing, TxnState::prepare_commit, TxnState::prepare_abort,
        TxnState::complete_commit, TxnState::complete_abort}) {
    EXPECT_EQ(txn_state_from_name(txn_state_name(s)), s);
  }
  EXPECT_EQ(txn_state_from_name("Ongoing"), TxnState::ongoing);
  EXPECT_FALSE(txn_state_from_name("ongoing"));
  EXPECT_FALSE(txn_state_from_name("Dead"));
  EXPECT_FALSE(txn_state_from_name(""));
}

TEST(TxnListing, EmptyFilterListsEverything) {
  TxnListFilter f;
  EXPECT_TRUE(txn_listed(f, meta(TxnState::empty, 1), 1000));
  EXPECT_TRUE(txn_listed(f, meta(TxnState::ongoing, 2, 10), 1000));
  EXPECT_TRUE(unknown_state_filters(f).empty());
}

TEST(TxnListing, StatesAndProducerIdsMustBothMatch) {
  TxnListFilter f;
  f.states = {"Ongoing", "PrepareAbort"};
  f.producer_ids = {7, 9};
  EXPECT_TRUE(txn_listed(f, meta(TxnState::ongoing, 7, 0), 5));
  EXPECT_TRUE(txn_listed(f, meta(TxnState::prepare_abort, 9, 0), 5));
  EXPECT_FALSE(txn_listed(f, meta(TxnState::ongoing, 8, 0), 5));      // other producer
  EXPECT_FALSE(txn_listed(f, meta(TxnState::empty, 7), 5));           // other state
  EXPECT_FALSE(txn_listed(f, meta(TxnState::complete_abort, 9), 5));  // other state
}

TEST(TxnListing, UnknownStatesAreReportedAndMatchNothingAlone) {
  TxnListFilter f;
  f.states = {"Bogus", "Ongoing", "ongoing"};
  EXPECT_EQ(unknown_state_filters(f), (std::vector<std::string>{"Bogus", "ongoing"}));
  EXPECT_TRUE(txn_listed(f, meta(TxnState::ongoing, 1, 0), 5));
  f.states = {"Bogus"};
  for (TxnState s : {TxnState::empty, TxnState::ongoing, TxnState::complete_commit}) {
    EXPECT_FALSE(txn_listed(f, meta(s, 1, 0), 5));
  }
}

TEST(TxnListing, DurationFilterKeepsTransactionsOpenStrictlyLonger) {
  TxnListFilter f;
  f.min_duration_ms = 1000;
  EXPECT_TRUE(txn_listed(f, meta(TxnState::ongoing, 1, 0), 1001));
  EXPECT_FALSE(txn_listed(f, meta(TxnState::ongoing, 1, 1), 1001));  // exactly 1000 ms
  EXPECT_FALSE(txn_listed(f, meta(TxnState::ongoing, 1, 900), 1001));
  // No transaction open (no start time): never "running longer".
  EXPECT_FALSE(txn_listed(f, meta(TxnState::empty, 1), 1000000));
  EXPECT_FALSE(txn_listed(f, meta(TxnState::complete_commit, 1), 1000000));
  f.min_duration_ms = 0;
  EXPECT_TRUE(txn_listed(f, meta(TxnState::prepare_commit, 1, 10), 11));
  EXPECT_FALSE(txn_listed(f, meta(TxnState::prepare_commit, 1, 10), 10));
}

struct NoEffects : TxnEffects {
  bool write_marker(const TopicPartition&, int64_t, int16_t, bool, int32_t) override {
    return true;
  }
  void commit_offsets(const std::string&, int64_t, std::vector<PendingOffset>,
                      std::function<void()> done) override {
    done();
  }
  Result<int64_t> new_producer_id() override { return next++; }
  int64_t next = 100;
};

TEST(TxnListing, CoordinatorListsEveryIdWithItsState) {
  NoEffects fx;
  TxnCoordinator c(TxnLimits{60000}, fx, /*id_expiration_ms=*/1000);
  EXPECT_TRUE(c.list().empty());
  const InitResult a = c.init_producer_id("a", 5000, -1, -1, 0);
  const InitResult b = c.init_producer_id("b", 5000, -1, -1, 0);
  ASSERT_EQ(c.add_partitions("b", b.producer_id, b.producer_epoch, {{"t", 0}, {"t", 1}}, 10),
            TxnError::none);
  auto l = c.list();
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[0].first, "a");
  EXPECT_EQ(l[0].second.state, TxnState::empty);
  EXPECT_EQ(l[0].second.producer_id, a.producer_id);
  EXPECT_EQ(l[1].first, "b");
  EXPECT_EQ(l[1].second.state, TxnState::ongoing);
  EXPECT_EQ(l[1].second.started_ms, 10);
  EXPECT_EQ(l[1].second.partitions.size(), 2u);
  EXPECT_EQ(l[1].second, *c.describe("b"));
  // An expired id is no longer listed; one with an open transaction stays.
  c.sweep(2000);
  l = c.list();
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].first, "b");
}

}  // namespace
}  // namespace strata::broker::txn
