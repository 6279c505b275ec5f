// Unit tests for protocol/messages/headers.h and the generated api table.
#include "protocol/messages/headers.h"

#include <gtest/gtest.h>

#include <vector>

#include "protocol/messages/api_table.h"

namespace strata::protocol {
namespace {

TEST(ApiTable, ListsSchemadApisWithStrataRanges) {
  const ApiInfo* produce = find_api(0);
  ASSERT_NE(produce, nullptr);
  EXPECT_STREQ(produce->name, "Produce");
  EXPECT_EQ(produce->min_version, 0);
  EXPECT_EQ(produce->max_version, 11);
  EXPECT_EQ(produce->flexible_min, 9);
  const ApiInfo* fetch = find_api(1);
  ASSERT_NE(fetch, nullptr);
  EXPECT_EQ(fetch->min_version, 4);
  EXPECT_EQ(fetch->max_version, 12);
  EXPECT_EQ(find_api(12345), nullptr);
  int16_t prev = -1;
  for (const auto& a : all_apis()) {
    EXPECT_GT(a.key, prev);
    prev = a.key;
  }
  EXPECT_GE(all_apis().size(), 8u);
}

TEST(HeaderVersions, FlexibleBoundaries) {
  EXPECT_EQ(request_header_version(0, 8), 1);
  EXPECT_EQ(request_header_version(0, 9), 2);
  EXPECT_EQ(response_header_version(0, 8), 0);
  EXPECT_EQ(response_header_version(0, 9), 1);
  EXPECT_EQ(request_header_version(3, 9), 2);
  EXPECT_EQ(response_header_version(3, 12), 1);
  EXPECT_EQ(request_header_version(-5, 0), -1);
}

TEST(HeaderVersions, ApiVersionsResponseAlwaysV0) {
  EXPECT_EQ(request_header_version(18, 3), 2);
  EXPECT_EQ(response_header_version(18, 3), 0);
  EXPECT_EQ(response_header_version(18, 4), 0);
  EXPECT_EQ(response_header_version(18, 0), 0);
}

TEST(RequestHeader, V2ClientIdIsInt16LengthString) {
  // api 3, v12, corr 7, client id "ab" (int16 length even in v2), one unknown tag, then body.
  std::vector<uint8_t> b = {0x00, 0x03, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x07, 0x00,
                            0x02, 'a',  'b',  0x01, 0x09, 0x01, 0x55, 0xee};
  Reader r(b.data(), b.size());
  RequestHeader h;
  h.decode(r, 2);
  EXPECT_EQ(h.request_api_key, 3);
  EXPECT_EQ(h.request_api_version, 12);
  EXPECT_EQ(h.correlation_id, 7);
  EXPECT_EQ(h.client_id, std::optional<std::string>("ab"));
  EXPECT_EQ(r.read_int8(), static_cast<int8_t>(0xee));
}

TEST(RequestHeader, NullClientIdAndEncode) {
  RequestHeader h;
  h.request_api_key = 18;
  h.request_api_version = 3;
  h.correlation_id = 1;
  Writer w;
  h.encode(w, 2);
  EXPECT_EQ(w.buffer(), (std::vector<uint8_t>{0x00, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, 0xff,
                                              0xff, 0x00}));
  EXPECT_EQ(h.size(2), w.size());
  Reader r(w.buffer().data(), w.size());
  RequestHeader back;
  back.decode(r, 2);
  EXPECT_EQ(back, h);
}

TEST(RequestHeader, TruncatedThrows) {
  std::vector<uint8_t> b = {0x00, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x07, 0x00, 0x09, 'a'};
  Reader r(b.data(), b.size());
  RequestHeader h;
  EXPECT_THROW(h.decode(r, 1), DecodeError);
  EXPECT_THROW(peek_api_key_version(b.data(), 3), DecodeError);
  auto kv = peek_api_key_version(b.data(), b.size());
  EXPECT_EQ(kv.api_key, 3);
  EXPECT_EQ(kv.api_version, 1);
}

TEST(ResponseHeader, V0AndV1) {
  ResponseHeader h{0x01020304};
  Writer w0, w1;
  h.encode(w0, 0);
  h.encode(w1, 1);
  EXPECT_EQ(w0.buffer(), (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(w1.buffer(), (std::vector<uint8_t>{1, 2, 3, 4, 0}));
  EXPECT_EQ(h.size(0), 4u);
  EXPECT_EQ(h.size(1), 5u);
}

}  // namespace
}  // namespace strata::protocol
