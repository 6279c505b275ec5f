#include "pkindex/table_config.h"

#include <gtest/gtest.h>

namespace strata::pkindex {
namespace {

using Map = std::map<std::string, std::string>;

TEST(TableConfig, DefaultsPerEngine) {
  auto t = parse_table_config({{"table.type", "primary-key"}});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->merge_engine, MergeEngine::last_row);
  EXPECT_EQ(t->image, ChangelogImage::full);
  EXPECT_EQ(t->delete_behavior, DeleteBehavior::allow);
  EXPECT_EQ(t->ttl_ms, -1);
  EXPECT_EQ(t->partitioner, Partitioner::murmur2);

  auto f = parse_table_config({{"table.type", "primary-key"}, {"table.merge-engine", "first_row"}});
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->delete_behavior, DeleteBehavior::ignore);

  auto v = parse_table_config({{"table.type", "primary-key"},
                               {"table.merge-engine", "versioned"},
                               {"table.merge-engine.versioned.header", "ver"},
                               {"table.changelog.image", "wal"},
                               {"table.delete.behavior", "disable"},
                               {"table.kv.ttl.ms", "5000"},
                               {"table.partitioner", "crc32"}});
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->merge_engine, MergeEngine::versioned);
  EXPECT_EQ(v->version_header, "ver");
  EXPECT_EQ(v->image, ChangelogImage::wal);
  EXPECT_EQ(v->delete_behavior, DeleteBehavior::disable);
  EXPECT_EQ(v->ttl_ms, 5000);
  EXPECT_EQ(v->partitioner, Partitioner::crc32);
}

TEST(TableConfig, ErrorsNameTheKey) {
  struct Case {
    Map configs;
    std::string key;
  } cases[] = {
      {{{"table.type", "primary-key"}, {"table.merge-engine", "newest"}}, "table.merge-engine"},
      {{{"table.type", "primary-key"}, {"table.changelog.image", "some"}}, "table.changelog.image"},
      {{{"table.type", "primary-key"}, {"table.delete.behavior", "yes"}}, "table.delete.behavior"},
      {{{"table.type", "primary-key"}, {"table.kv.ttl.ms", "ten"}}, "table.kv.ttl.ms"},
      {{{"table.type", "primary-key"}, {"table.kv.ttl.ms", "0"}}, "table.kv.ttl.ms"},
      {{{"table.type", "primary-key"}, {"table.partitioner", "random"}}, "table.partitioner"},
      {{{"table.type", "kv"}}, "table.type"},
      {{{"table.type", "primary-key"}, {"table.merge-engine", "versioned"}},
       "table.merge-engine.versioned.header"},
      {{{"table.type", "primary-key"}, {"table.merge-engine.versioned.header", "v"}},
       "table.merge-engine.versioned.header"},
      {{{"table.type", "primary-key"},
        {"table.merge-engine", "versioned"},
        {"table.merge-engine.versioned.header", "strata.v"}},
       "table.merge-engine.versioned.header"},
      {{{"table.merge-engine", "first_row"}}, "table.merge-engine"},
      {{{"table.type", "primary-key"}, {"table.bogus", "1"}}, "table.bogus"},
  };
  for (const auto& c : cases) {
    auto t = parse_table_config(c.configs);
    ASSERT_FALSE(t.ok()) << c.key;
    EXPECT_EQ(t.status().code(), Errc::invalid_argument);
    EXPECT_NE(t.status().message().find(c.key), std::string::npos) << t.status().message();
  }
}

TEST(TableConfig, IsPkTable) {
  EXPECT_TRUE(is_pk_table({{"table.type", "primary-key"}}));
  EXPECT_FALSE(is_pk_table({{"table.type", "log"}}));
  EXPECT_FALSE(is_pk_table({}));
  EXPECT_EQ(check_table_key("table.type", "log"), "");
  EXPECT_NE(check_table_key("table.type", "x"), "");
}

TEST(TableConfig, OneTableDefinesKeysAndStructDefaults) {
  const TableConfig d;  // the table's defaults
  EXPECT_EQ(d.merge_engine, MergeEngine::last_row);
  EXPECT_EQ(d.image, ChangelogImage::full);
  EXPECT_EQ(d.delete_behavior, DeleteBehavior::allow);
  EXPECT_EQ(d.ttl_ms, -1);
  EXPECT_EQ(d.partitioner, Partitioner::murmur2);
  EXPECT_EQ(d.snapshot_interval_ms, kDefaultSnapshotIntervalMs);
  EXPECT_EQ(d.version_header, "");
  for (const auto& k : table_key_table().keys()) {
    EXPECT_EQ(k.name.rfind("table.", 0), 0u) << k.name;
    EXPECT_FALSE(k.doc.empty()) << k.name;
    EXPECT_NE(k.type, ConfigType::unknown) << k.name;
    EXPECT_EQ(check_table_key(k.name, k.default_value), "") << k.name;
    // Fixed at creation, but for the checkpoint interval.
    EXPECT_EQ(k.read_only(), k.name != kSnapshotIntervalMs) << k.name;
  }
  EXPECT_EQ(table_key_table().find(kSnapshotIntervalMs)->default_value,
            std::to_string(kDefaultSnapshotIntervalMs));
  // Errors name the key and the allowed values.
  EXPECT_EQ(check_table_key(kPartitioner, "random"),
            "Invalid value random for configuration table.partitioner: String must be one of: "
            "murmur2, crc32");
}

}  // namespace
}  // namespace strata::pkindex
