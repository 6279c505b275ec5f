// Unit tests for protocol/wire/errors.h: codes, names, retriability, messages.
#include "protocol/wire/errors.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace strata::protocol {
namespace {

TEST(Errors, CodesMatchKafka) {
  EXPECT_EQ(error_value(ErrorCode::unknown_server_error), -1);
  EXPECT_EQ(error_value(ErrorCode::none), 0);
  EXPECT_EQ(error_value(ErrorCode::unknown_topic_or_partition), 3);
  EXPECT_EQ(error_value(ErrorCode::unsupported_version), 35);
  EXPECT_EQ(error_value(ErrorCode::invalid_record), 87);
  EXPECT_EQ(error_value(ErrorCode::unknown_topic_id), 100);
  EXPECT_EQ(error_value(ErrorCode::share_session_limit_reached), 133);
}

TEST(Errors, NamesAndMessages) {
  EXPECT_STREQ(error_name(ErrorCode::unknown_topic_or_partition), "UNKNOWN_TOPIC_OR_PARTITION");
  EXPECT_STREQ(error_name(ErrorCode::invalid_topic_exception), "INVALID_TOPIC_EXCEPTION");
  EXPECT_STREQ(error_name(static_cast<ErrorCode>(99)), "UNKNOWN_ERROR_CODE");
  std::set<std::string> names;
  int known = 0;
  for (int c = -1; c <= 200; ++c) {
    auto e = error_from_code(static_cast<int16_t>(c));
    if (!e) continue;
    ++known;
    EXPECT_TRUE(names.insert(error_name(*e)).second) << c;
    EXPECT_GT(std::string(error_message(*e)).size(), 5u) << c;
  }
  EXPECT_EQ(known, 134);  // -1..133 without the never-assigned 99
  EXPECT_FALSE(error_from_code(99).has_value());
  EXPECT_FALSE(error_from_code(134).has_value());
}

TEST(Errors, Retriability) {
  EXPECT_TRUE(is_retriable(ErrorCode::not_leader_or_follower));
  EXPECT_TRUE(is_retriable(ErrorCode::unknown_topic_or_partition));
  EXPECT_TRUE(is_retriable(ErrorCode::corrupt_message));
  EXPECT_TRUE(is_retriable(ErrorCode::coordinator_load_in_progress));
  EXPECT_TRUE(is_retriable(ErrorCode::unknown_topic_id));
  EXPECT_FALSE(is_retriable(ErrorCode::none));
  EXPECT_FALSE(is_retriable(ErrorCode::message_too_large));
  EXPECT_FALSE(is_retriable(ErrorCode::topic_already_exists));
  EXPECT_FALSE(is_retriable(ErrorCode::unknown_server_error));
}

}  // namespace
}  // namespace strata::protocol
