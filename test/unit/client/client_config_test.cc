// Client properties (tools/client/client_config.h): Kafka's and librdkafka's spellings give the
// same ClientSecurity; anything unknown or unsupported is refused rather than ignored.
#include "tools/client/client_config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace strata::client {
namespace {

TEST(ClientConfig, KafkaAndLibrdkafkaSpellings) {
  auto kafka = client_security({{"security.protocol", "SASL_SSL"},
                                {"sasl.mechanism", "SCRAM-SHA-512"},
                                {"sasl.jaas.config",
                                 "org.apache.kafka.common.security.scram.ScramLoginModule "
                                 "required username=\"alice\" password=\"s3cr=t\";"},
                                {"ssl.truststore.type", "PEM"},
                                {"ssl.truststore.location", "/ca.pem"},
                                {"ssl.keystore.location", "/me.pem"}});
  ASSERT_TRUE(kafka.ok()) << kafka.status().message();
  EXPECT_TRUE(kafka->tls());
  EXPECT_TRUE(kafka->sasl());
  EXPECT_EQ(kafka->sasl_mechanism, "SCRAM-SHA-512");
  EXPECT_EQ(kafka->username, "alice");
  EXPECT_EQ(kafka->password, "s3cr=t");
  EXPECT_EQ(kafka->ca_file, "/ca.pem");
  EXPECT_EQ(kafka->cert_file, "/me.pem");
  EXPECT_TRUE(kafka->verify_hostname);

  auto rdkafka = client_security({{"security.protocol", "SASL_PLAINTEXT"},
                                  {"sasl.mechanisms", "PLAIN"},
                                  {"sasl.username", "bob"},
                                  {"sasl.password", "pw"},
                                  {"ssl.endpoint.identification.algorithm", ""}});
  ASSERT_TRUE(rdkafka.ok()) << rdkafka.status().message();
  EXPECT_FALSE(rdkafka->tls());
  EXPECT_EQ(rdkafka->username, "bob");
  EXPECT_FALSE(rdkafka->verify_hostname);

  auto plain = client_security({});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->protocol, "PLAINTEXT");
}

TEST(ClientConfig, RefusesWhatItWouldIgnore) {
  EXPECT_FALSE(client_security({{"ssl.trustsore.location", "/x"}}).ok());  // a typo
  EXPECT_FALSE(client_security({{"security.protocol", "TLS"}}).ok());
  EXPECT_FALSE(client_security({{"ssl.truststore.type", "JKS"}}).ok());
  EXPECT_FALSE(client_security({{"security.protocol", "SASL_SSL"}}).ok());  // no user
  EXPECT_FALSE(client_security({{"sasl.jaas.config", "broken"}}).ok());
  EXPECT_FALSE(client_security({{"ssl.endpoint.identification.algorithm", "http"}}).ok());
}

TEST(ClientConfig, ReadsPropertiesFiles) {
  const std::string path = testing::TempDir() + "/client.properties";
  {
    std::ofstream f(path);
    f << "# comment\n! also\n\nsecurity.protocol = SSL\nssl.ca.location=/ca.pem\n";
  }
  auto props = read_properties(path);
  ASSERT_TRUE(props.ok());
  EXPECT_EQ(props->at("security.protocol"), "SSL");
  EXPECT_EQ(props->size(), 2u);
  {
    std::ofstream f(path);
    f << "no equals sign\n";
  }
  EXPECT_FALSE(read_properties(path).ok());
  std::remove(path.c_str());
  EXPECT_FALSE(read_properties(path).ok());
}

}  // namespace
}  // namespace strata::client
