// decide(): every merge engine x delete behaviour on the engine-level decisions (the image mode
// only changes the emitted headers; pk_state_test covers it end to end).
#include "pkindex/merge_engine.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::pkindex {
namespace {

std::span<const uint8_t> b(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct Fixture {
  TableConfig table;
  std::unique_ptr<Merger> merger;
  Fixture(MergeEngine e, DeleteBehavior d) {
    table.merge_engine = e;
    table.delete_behavior = d;
    if (e == MergeEngine::versioned)
      table.version_header = std::string("v");  // (GCC 12 false -Wrestrict on = "v")
    merger = make_merger(e);
  }
  Decision run(std::optional<CurrentRow> cur, std::optional<std::string> value,
               std::optional<int64_t> version = std::nullopt) {
    static thread_local std::string keep;
    Write w;
    if (value) {
      keep = *value;
      w.value = b(keep);
    }
    w.version = version;
    return decide(table, *merger, cur, w);
  }
};

const std::string kA = "row-a";
const std::string kB = "row-b";

TEST(MergeEngine, LastRow) {
  for (auto del : {DeleteBehavior::allow, DeleteBehavior::ignore, DeleteBehavior::disable}) {
    Fixture f(MergeEngine::last_row, del);
    EXPECT_EQ(f.run(std::nullopt, kA).kind, ChangeKind::insert);
    EXPECT_EQ(f.run(CurrentRow{b(kA), {}}, kB).kind, ChangeKind::update);
    EXPECT_EQ(f.run(CurrentRow{b(kA), {}}, kA).kind, ChangeKind::none);  // byte-identical
    EXPECT_EQ(f.run(CurrentRow{b(kA), {}}, std::string()).kind, ChangeKind::update);
    auto d = f.run(CurrentRow{b(kA), {}}, std::nullopt);
    auto absent = f.run(std::nullopt, std::nullopt);
    switch (del) {
      case DeleteBehavior::allow:
        EXPECT_EQ(d.kind, ChangeKind::del);
        EXPECT_EQ(absent.kind, ChangeKind::none);
        break;
      case DeleteBehavior::ignore:
        EXPECT_EQ(d.kind, ChangeKind::none);
        EXPECT_FALSE(d.rejected);
        EXPECT_EQ(absent.kind, ChangeKind::none);
        break;
      case DeleteBehavior::disable:
        EXPECT_TRUE(d.rejected);
        EXPECT_TRUE(absent.rejected);
        EXPECT_NE(d.reason.find("table.delete.behavior"), std::string::npos);
        break;
    }
  }
}

TEST(MergeEngine, FirstRow) {
  for (auto del : {DeleteBehavior::allow, DeleteBehavior::ignore, DeleteBehavior::disable}) {
    Fixture f(MergeEngine::first_row, del);
    EXPECT_EQ(f.run(std::nullopt, kA).kind, ChangeKind::insert);
    EXPECT_EQ(f.run(CurrentRow{b(kA), {}}, kB).kind, ChangeKind::none);
    EXPECT_EQ(f.run(CurrentRow{b(kA), {}}, kA).kind, ChangeKind::none);
    auto d = f.run(CurrentRow{b(kA), {}}, std::nullopt);
    EXPECT_EQ(d.rejected, del == DeleteBehavior::disable);
    if (!d.rejected) {
      EXPECT_EQ(d.kind, del == DeleteBehavior::allow ? ChangeKind::del : ChangeKind::none);
    }
  }
}

TEST(MergeEngine, Versioned) {
  for (auto del : {DeleteBehavior::allow, DeleteBehavior::ignore, DeleteBehavior::disable}) {
    Fixture f(MergeEngine::versioned, del);
    EXPECT_EQ(f.run(std::nullopt, kA, 5).kind, ChangeKind::insert);
    EXPECT_EQ(f.run(std::nullopt, kA, std::nullopt).kind, ChangeKind::none);  // missing version
    EXPECT_EQ(f.run(std::nullopt, kA, INT64_MIN).kind, ChangeKind::insert);
    CurrentRow cur{b(kA), 5};
    EXPECT_EQ(f.run(cur, kB, 4).kind, ChangeKind::none);    // lower
    EXPECT_EQ(f.run(cur, kB, 5).kind, ChangeKind::update);  // tie -> new write
    EXPECT_EQ(f.run(cur, kB, 6).kind, ChangeKind::update);  // higher
    EXPECT_EQ(f.run(cur, kA, 5).kind, ChangeKind::none);    // identical bytes + version
    EXPECT_EQ(f.run(cur, kA, 6).kind, ChangeKind::update);  // identical bytes, newer version
    EXPECT_EQ(f.run(cur, kB, std::nullopt).kind, ChangeKind::none);  // missing version
    CurrentRow neg{b(kA), -10};
    EXPECT_EQ(f.run(neg, kB, -11).kind, ChangeKind::none);  // signed comparison
    EXPECT_EQ(f.run(neg, kB, -9).kind, ChangeKind::update);
    auto lower_del = f.run(cur, std::nullopt, 4);
    auto tie_del = f.run(cur, std::nullopt, 5);
    auto nover_del = f.run(cur, std::nullopt, std::nullopt);
    switch (del) {
      case DeleteBehavior::allow:
        EXPECT_EQ(lower_del.kind, ChangeKind::none);
        EXPECT_EQ(tie_del.kind, ChangeKind::del);
        EXPECT_EQ(nover_del.kind, ChangeKind::none);
        break;
      case DeleteBehavior::ignore:
        EXPECT_EQ(tie_del.kind, ChangeKind::none);
        break;
      case DeleteBehavior::disable:
        EXPECT_TRUE(lower_del.rejected);
        EXPECT_TRUE(tie_del.rejected);
        break;
    }
  }
}

TEST(MergeEngine, ChangeKindNames) {
  for (auto k : {ChangeKind::insert, ChangeKind::update, ChangeKind::del, ChangeKind::none}) {
    auto n = change_kind_name(k);
    EXPECT_EQ(parse_change_kind(b(std::string(n))), k);
  }
  EXPECT_EQ(parse_change_kind(b("upsert")), std::nullopt);
}

}  // namespace
}  // namespace strata::pkindex
