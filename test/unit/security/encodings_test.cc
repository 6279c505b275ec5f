// The percent-escaping of names in the ACL and SCRAM encodings, now one shared helper: each keeps
// the byte set it always had, so files and etcd keys written before still load and new ones are
// written byte for byte as before. The reference escapers below are the earlier encoders, kept
// here as the independent check.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "broker/security/acl_text.h"
#include "broker/security/scram_store.h"
#include "protocol/base/percent_escape.h"
#include "storage/env.h"
#include "test/unit/cluster/fake_coordination.h"
#include "test/unit/storage/test_util.h"

namespace strata::broker::security {
namespace {

std::string old_escape(std::string_view s, bool (*escaped)(unsigned char)) {
  std::string out;
  for (unsigned char c : s) {
    if (escaped(c)) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}
bool old_acl_escaped(unsigned char c) { return c < 0x21 || c == '%' || c == '/' || c >= 0x7f; }
bool old_scram_escaped(unsigned char c) {
  return !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == '@');
}

std::string every_byte() {
  std::string s;
  for (int c = 1; c < 256; ++c) s += static_cast<char>(c);
  return s + '\0' + "tail";
}

TEST(PercentEscape, RoundTripsAndRejectsMalformedEscapes) {
  const std::string all = every_byte();
  for (KeepByte keep :
       {+[](unsigned char) { return true; }, +[](unsigned char) { return false; },
        +[](unsigned char c) { return printable_except(c, ",="); }, &url_unreserved}) {
    const std::string e = percent_escape(all, keep);
    EXPECT_EQ(percent_unescape(e), all);
  }
  EXPECT_EQ(percent_escape("%", [](unsigned char) { return true; }), "%25") << "'%' never kept";
  EXPECT_EQ(percent_unescape("a%2fb%2Fc"), "a/b/c") << "either case of hex";
  EXPECT_EQ(percent_escape("orders-value/v1 ü~._", url_unreserved), "orders-value%2Fv1%20%C3%BC~._")
      << "a URL path segment keeps RFC 3986's unreserved bytes only";
  EXPECT_EQ(percent_unescape("a/b c"), "a/b c") << "unescaped bytes stand for themselves";
  for (const char* bad : {"%", "%4", "a%G1", "%+1", "% 1", "%0x", "%4 "}) {
    EXPECT_FALSE(percent_unescape(bad).has_value()) << bad;
  }
}

TEST(AclEncoding, SameBytesAsBefore) {
  const std::string all = every_byte();
  AclBinding b{ResourceType::topic, all, PatternType::literal,
               "User:" + all,       "*", AclOperation::read,
               AclPermission::allow};
  const std::string line = encode_line(b);
  EXPECT_EQ(line, "TOPIC\tLITERAL\t" + old_escape(all, old_acl_escaped) +
                      "\tUser:" + old_escape(all, old_acl_escaped) + "\t*\tREAD\tALLOW");
  EXPECT_EQ(decode_line(line), b);
  // A line as the earlier encoder wrote it, lower-case hex included.
  auto old = decode_line("GROUP\tPREFIXED\tteam%2Fa%20b\tUser:C=x%2cO=y\t10.0.0.1\tREAD\tDENY");
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->resource_name, "team/a b");
  EXPECT_EQ(old->principal, "User:C=x,O=y");
}

TEST(ScramEncoding, SameKeysAndFileLinesAsBefore) {
  const std::string user = every_byte();
  const ScramCredential cred{"salt", "stored", "server", 4096};
  cluster::FakeCoordination etcd;
  auto store = ScramStore::open_cluster(etcd, "/s");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->alter({{user, ScramMechanism::sha256, cred}}).ok());
  auto keys = etcd.range("/s/scram/", cluster::prefix_end("/s/scram/"));
  ASSERT_TRUE(keys.ok());
  ASSERT_EQ(keys->kvs.size(), 1u);
  EXPECT_EQ(keys->kvs[0].key, "/s/scram/SCRAM-SHA-256/" + old_escape(user, old_scram_escaped));
  EXPECT_TRUE((*store)->has(user, ScramMechanism::sha256));

  storage::testing::TempDir dir;
  {
    std::ofstream f(dir.sub("scram-credentials"));
    f << "# written before\n"
      << "ops%2Falice%40x\tSCRAM-SHA-512\t" << format_scram_credential(cred) << "\n";
  }
  auto file = ScramStore::open_file(storage::default_env(), dir.path());
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->has("ops/alice@x", ScramMechanism::sha512));
  ASSERT_TRUE((*file)->alter({{user, ScramMechanism::sha256, cred}}).ok());
  std::ifstream f(dir.sub("scram-credentials"));
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_NE(text.str().find("\n" + old_escape(user, old_scram_escaped) + "\tSCRAM-SHA-256\t"),
            std::string::npos);
  EXPECT_NE(text.str().find("\nops%2Falice@x\tSCRAM-SHA-512\t"), std::string::npos)
      << "rewritten in the encoder's own form ('@' is kept)";
}

}  // namespace
}  // namespace strata::broker::security
