// Tests of the POSIX Env, the atomic file helper and FaultInjectionEnv itself.
#include "storage/env.h"

#include <gtest/gtest.h>

#include "storage/file_util.h"
#include "test/unit/storage/fault_env.h"
#include "test/unit/storage/test_util.h"

namespace strata::storage {
namespace {

using testing::FaultInjectionEnv;
using testing::TempDir;

std::span<const uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(PosixEnv, WriteThenReadThroughAnotherHandle) {
  TempDir tmp;
  Env* env = default_env();
  auto w = env->new_writable_file(tmp.sub("f"), true);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->append(bytes("hello ")).ok());
  auto r = env->new_random_access_file(tmp.sub("f"));
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE((*w)->append(bytes("world")).ok());
  EXPECT_EQ((*w)->size(), 11u);
  // Unbuffered: the reader sees appended bytes at once, without sync.
  uint8_t buf[32];
  auto n = (*r)->read(0, sizeof(buf), buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), *n), "hello world");
  EXPECT_GE((*r)->fd(), 0);
  EXPECT_EQ(*(*r)->size(), 11u);
  ASSERT_TRUE((*w)->truncate(5).ok());
  ASSERT_TRUE((*w)->append(bytes("!")).ok());
  EXPECT_EQ(*read_file_to_string(env, tmp.sub("f")), "hello!");
  ASSERT_TRUE((*w)->sync().ok());
  ASSERT_TRUE((*w)->close().ok());
}

TEST(FileUtil, ReadLineFileSkipsCommentsAndBlankLines) {
  TempDir tmp;
  Env* env = default_env();
  auto none = read_line_file(env, tmp.sub("absent"));
  ASSERT_TRUE(none.ok()) << "an absent file has no lines";
  EXPECT_TRUE(none->empty());
  ASSERT_TRUE(write_file_atomically(env, tmp.sub("f"), "# header\na\tb\n\n#c\nd #e\nlast").ok());
  auto lines = read_line_file(env, tmp.sub("f"));
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(*lines, (std::vector<std::string>{"a\tb", "d #e", "last"}));
}

TEST(PosixEnv, ReopenAppendsAtEnd) {
  TempDir tmp;
  Env* env = default_env();
  ASSERT_TRUE(write_file_atomically(env, tmp.sub("f"), "abc").ok());
  auto w = env->new_writable_file(tmp.sub("f"), false);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->size(), 3u);
  ASSERT_TRUE((*w)->append(bytes("d")).ok());
  EXPECT_EQ(*read_file_to_string(env, tmp.sub("f")), "abcd");
  EXPECT_FALSE(env->file_exists(tmp.sub("f.tmp")));
}

TEST(PosixEnv, DirectoryOperations) {
  TempDir tmp;
  Env* env = default_env();
  ASSERT_TRUE(env->create_dir(tmp.sub("a/b")).ok());
  ASSERT_TRUE(env->create_dir(tmp.sub("a/b")).ok());  // idempotent
  EXPECT_TRUE(env->is_directory(tmp.sub("a/b")));
  ASSERT_TRUE(write_file_atomically(env, tmp.sub("a/b/x"), "1").ok());
  ASSERT_TRUE(env->rename_file(tmp.sub("a/b/x"), tmp.sub("a/b/y")).ok());
  auto names = env->list_dir(tmp.sub("a/b"));
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"y"});
  EXPECT_EQ(*env->file_size(tmp.sub("a/b/y")), 1u);
  ASSERT_TRUE(env->sync_dir(tmp.sub("a/b")).ok());
  EXPECT_EQ(env->remove_file(tmp.sub("a/b/nope")).code(), Errc::not_found);
  EXPECT_EQ(env->new_random_access_file(tmp.sub("nope")).status().code(), Errc::not_found);
  ASSERT_TRUE(env->remove_dir_recursive(tmp.sub("a")).ok());
  EXPECT_FALSE(env->file_exists(tmp.sub("a")));
}

TEST(FaultEnv, DropUnsyncedTruncatesToLastSync) {
  TempDir tmp;
  FaultInjectionEnv env;
  auto w = env.new_writable_file(tmp.sub("f"), true);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(env.sync_dir(tmp.path()).ok());  // the creation is durable
  ASSERT_TRUE((*w)->append(bytes("durable")).ok());
  ASSERT_TRUE((*w)->sync().ok());
  ASSERT_TRUE((*w)->append(bytes("-lost")).ok());
  w->reset();
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  EXPECT_EQ(*read_file_to_string(&env, tmp.sub("f")), "durable");
}

TEST(FaultEnv, UnsyncedCreateAndRenameAreUndone) {
  TempDir tmp;
  FaultInjectionEnv env;
  ASSERT_TRUE(write_file_atomically(&env, tmp.sub("meta"), "v1").ok());  // dir synced: durable
  // A replace whose dir sync never happens: power loss restores v1.
  {
    auto w = env.new_writable_file(tmp.sub("meta.tmp"), true);
    ASSERT_TRUE((*w)->append(bytes("v2")).ok());
    ASSERT_TRUE((*w)->sync().ok());
  }
  ASSERT_TRUE(env.rename_file(tmp.sub("meta.tmp"), tmp.sub("meta")).ok());
  EXPECT_EQ(*read_file_to_string(&env, tmp.sub("meta")), "v2");
  // A new file never made durable by a dir sync disappears.
  {
    auto w = env.new_writable_file(tmp.sub("new"), true);
    ASSERT_TRUE(w.ok());
  }
  ASSERT_TRUE(env.drop_unsynced_data().ok());
  EXPECT_EQ(*read_file_to_string(&env, tmp.sub("meta")), "v1");
  EXPECT_FALSE(env.file_exists(tmp.sub("new")));
  EXPECT_FALSE(env.file_exists(tmp.sub("meta.tmp")));
}

TEST(FaultEnv, FailAfterAndHooks) {
  TempDir tmp;
  FaultInjectionEnv env;
  auto w = env.new_writable_file(tmp.sub("f"), true);
  ASSERT_TRUE(w.ok());
  env.fail_after(1);
  EXPECT_TRUE((*w)->append(bytes("a")).ok());
  EXPECT_EQ((*w)->append(bytes("b")).code(), Errc::io_error);
  EXPECT_EQ((*w)->sync().code(), Errc::io_error);
  env.clear_faults();
  EXPECT_TRUE((*w)->append(bytes("c")).ok());
  env.set_hook([](std::string_view op, const std::string&) {
    return op == "rename" ? Status(Errc::io_error, "stop before rename") : Status::Ok();
  });
  EXPECT_FALSE(write_file_atomically(&env, tmp.sub("g"), "x").ok());
  EXPECT_FALSE(env.file_exists(tmp.sub("g")));
  env.clear_faults();
  env.set_torn_appends(true);
  env.fail_after(0);
  EXPECT_FALSE((*w)->append(bytes("1234")).ok());
  env.clear_faults();
  EXPECT_EQ(*read_file_to_string(&env, tmp.sub("f")), "ac12");  // half of the torn append landed
}

}  // namespace
}  // namespace strata::storage
