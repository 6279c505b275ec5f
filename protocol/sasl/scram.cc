#include "protocol/sasl/scram.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <vector>

#include "protocol/base/base64.h"

namespace strata::protocol::sasl {

namespace {

const EVP_MD* digest(ScramMechanism m) {
  return m == ScramMechanism::sha256 ? EVP_sha256() : EVP_sha512();
}

std::string hmac(ScramMechanism m, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(digest(m), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string hash(ScramMechanism m, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, digest(m), nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

Result<std::string> salted_password(ScramMechanism m, std::string_view password,
                                    std::string_view salt, int32_t iterations) {
  std::string out(static_cast<size_t>(EVP_MD_get_size(digest(m))), '\0');
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                        reinterpret_cast<const unsigned char*>(salt.data()),
                        static_cast<int>(salt.size()), iterations, digest(m),
                        static_cast<int>(out.size()),
                        reinterpret_cast<unsigned char*>(out.data())) != 1) {
    return Status(Errc::io_error, "PBKDF2 failed");
  }
  return out;
}

std::string xor_bytes(std::string_view a, std::string_view b) {
  std::string out(a.size(), '\0');
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) out[i] = static_cast<char>(a[i] ^ b[i]);
  return out;
}

std::string random_nonce() {
  unsigned char bytes[24];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) std::abort();  // no entropy: nothing safe to do
  return base64_encode(std::string_view(reinterpret_cast<char*>(bytes), sizeof(bytes)));
}

Status fail(std::string_view why) {
  return Status(Errc::invalid_argument, "Authentication failed: " + std::string(why));
}

// Splits "a=x,b=y,..." into (letter, value) attributes, in order.
std::vector<std::pair<char, std::string_view>> attributes(std::string_view s) {
  std::vector<std::pair<char, std::string_view>> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string_view::npos) comma = s.size();
    std::string_view item = s.substr(pos, comma - pos);
    if (item.size() >= 2 && item[1] == '=') {
      out.emplace_back(item[0], item.substr(2));
    } else {
      out.emplace_back('\0', item);  // malformed: the caller rejects it
    }
    pos = comma + 1;
  }
  return out;
}

// saslname (RFC 5802): "=2C" is ',' and "=3D" is '='; any other '=' is an error.
std::optional<std::string> decode_saslname(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ',') return std::nullopt;
    if (s[i] != '=') {
      out.push_back(s[i]);
      continue;
    }
    if (s.substr(i, 3) == "=2C") {
      out.push_back(',');
    } else if (s.substr(i, 3) == "=3D") {
      out.push_back('=');
    } else {
      return std::nullopt;
    }
    i += 2;
  }
  return out;
}

std::string encode_saslname(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ',') {
      out += "=2C";
    } else if (c == '=') {
      out += "=3D";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool printable_nonce(std::string_view n) {
  if (n.empty()) return false;
  for (char c : n) {
    if (c < 0x21 || c > 0x7e || c == ',') return false;
  }
  return true;
}

}  // namespace

std::optional<ScramMechanism> scram_mechanism(std::string_view name) {
  if (name == "SCRAM-SHA-256") return ScramMechanism::sha256;
  if (name == "SCRAM-SHA-512") return ScramMechanism::sha512;
  return std::nullopt;
}

const char* scram_mechanism_name(ScramMechanism m) {
  return m == ScramMechanism::sha256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Result<ScramCredential> make_scram_credential(ScramMechanism m, std::string_view password,
                                              int32_t iterations, std::string salt) {
  if (iterations < kScramMinIterations) {
    return Status(Errc::invalid_argument, "SCRAM iterations must be at least 4096");
  }
  if (salt.empty()) {
    auto fresh = scram_random_salt();
    if (!fresh.ok()) return fresh.status();
    salt = std::move(*fresh);
  }
  auto salted = salted_password(m, password, salt, iterations);
  if (!salted.ok()) return salted.status();
  return scram_credential_from_salted(m, *salted, std::move(salt), iterations);
}

Result<std::string> scram_salted_password(ScramMechanism m, std::string_view password,
                                          std::string_view salt, int32_t iterations) {
  if (iterations < 1) return Status(Errc::invalid_argument, "SCRAM iterations must be positive");
  return salted_password(m, password, salt, iterations);
}

ScramCredential scram_credential_from_salted(ScramMechanism m, std::string_view salted_password,
                                             std::string salt, int32_t iterations) {
  ScramCredential c;
  c.salt = std::move(salt);
  c.iterations = iterations;
  c.stored_key = hash(m, hmac(m, salted_password, "Client Key"));
  c.server_key = hmac(m, salted_password, "Server Key");
  return c;
}

Result<std::string> scram_random_salt() {
  std::string salt(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(salt.data()), 32) != 1) {
    return Status(Errc::io_error, "no random salt");
  }
  return salt;
}

ScramServer::ScramServer(ScramMechanism m, Lookup lookup, std::string nonce)
    : m_(m), lookup_(std::move(lookup)), server_nonce_(nonce.empty() ? random_nonce() : nonce) {}

Result<std::string> ScramServer::first(std::string_view client_first) {
  if (state_ != 0) return fail("unexpected client-first-message");
  state_ = -1;  // any failure ends the exchange
  // gs2-header: "n,," or "y,," with an optional "a=authzid" between the commas.
  const size_t c1 = client_first.find(',');
  const size_t c2 = c1 == std::string_view::npos ? c1 : client_first.find(',', c1 + 1);
  if (c2 == std::string_view::npos) return fail("malformed client-first-message");
  const std::string_view flag = client_first.substr(0, c1);
  const std::string_view authzid = client_first.substr(c1 + 1, c2 - c1 - 1);
  if (flag != "n" && flag != "y") return fail("channel binding is not supported");
  gs2_header_ = std::string(client_first.substr(0, c2 + 1));
  client_first_bare_ = std::string(client_first.substr(c2 + 1));
  auto attrs = attributes(client_first_bare_);
  if (attrs.size() < 2 || attrs[0].first != 'n' || attrs[1].first != 'r') {
    return fail("malformed client-first-message");
  }
  // Kafka's extensions ("key=value") follow the nonce; RFC 5802's mandatory 'm' is refused.
  for (size_t i = 2; i < attrs.size(); ++i) {
    if (attrs[i].first == 'm') return fail("mandatory extensions are not supported");
    if (attrs[i].first != '\0') continue;
    const std::string_view ext = attrs[i].second;
    if (ext.find('=') == std::string_view::npos) return fail("malformed client-first-message");
    if (ext.rfind("tokenauth=", 0) == 0) return fail("delegation tokens are not supported");
  }
  auto user = decode_saslname(attrs[0].second);
  if (!user || user->empty()) return fail("malformed user name");
  if (!authzid.empty()) {
    auto az = authzid.substr(0, 2) == "a=" ? decode_saslname(authzid.substr(2)) : std::nullopt;
    if (!az || *az != *user) return fail("authorization id differs from the user");
  }
  const std::string_view client_nonce = attrs[1].second;
  if (!printable_nonce(client_nonce)) return fail("malformed nonce");
  auto cred = lookup_(*user);
  if (!cred) return fail("invalid user credentials");
  cred_ = *cred;
  user_ = *user;
  nonce_ = std::string(client_nonce) + server_nonce_;
  server_first_ =
      "r=" + nonce_ + ",s=" + base64_encode(cred_.salt) + ",i=" + std::to_string(cred_.iterations);
  state_ = 1;
  return server_first_;
}

Result<std::string> ScramServer::final(std::string_view client_final) {
  if (state_ != 1) return fail("unexpected client-final-message");
  state_ = -1;
  const size_t p = client_final.rfind(",p=");
  if (p == std::string_view::npos) return fail("malformed client-final-message");
  const std::string_view without_proof = client_final.substr(0, p);
  auto attrs = attributes(without_proof);
  if (attrs.size() < 2 || attrs[0].first != 'c' || attrs[1].first != 'r') {
    return fail("malformed client-final-message");
  }
  if (attrs[0].second != base64_encode(gs2_header_)) return fail("channel binding mismatch");
  // Kafka checks that the client's nonce ends with the server-first-message's (not that it equals
  // it): librdkafka sends its own nonce again in front of the combined one, and Kafka accepts it.
  if (!std::string_view(attrs[1].second).ends_with(nonce_)) return fail("nonce mismatch");
  auto proof = base64_decode(client_final.substr(p + 3));
  if (!proof.ok()) return fail("malformed proof");
  const std::string auth_message =
      client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
  const std::string client_signature = hmac(m_, cred_.stored_key, auth_message);
  const std::string client_key = xor_bytes(*proof, client_signature);
  if (proof->size() != client_signature.size() ||
      !constant_time_equal(hash(m_, client_key), cred_.stored_key)) {
    return fail("invalid credentials");
  }
  complete_ = true;
  state_ = 2;
  return "v=" + base64_encode(hmac(m_, cred_.server_key, auth_message));
}

ScramClient::ScramClient(ScramMechanism m, std::string user, std::string password,
                         std::string nonce)
    : m_(m),
      user_(std::move(user)),
      password_(std::move(password)),
      nonce_(nonce.empty() ? random_nonce() : std::move(nonce)) {}

std::string ScramClient::first() {
  client_first_bare_ = "n=" + encode_saslname(user_) + ",r=" + nonce_;
  return "n,," + client_first_bare_;
}

Result<std::string> ScramClient::final(std::string_view server_first) {
  auto attrs = attributes(server_first);
  if (attrs.size() < 3 || attrs[0].first != 'r' || attrs[1].first != 's' || attrs[2].first != 'i') {
    return Status(Errc::invalid_argument, "malformed server-first-message");
  }
  const std::string_view nonce = attrs[0].second;
  if (nonce.substr(0, nonce_.size()) != nonce_ || nonce.size() == nonce_.size()) {
    return Status(Errc::invalid_argument, "server nonce does not extend ours");
  }
  auto salt = base64_decode(attrs[1].second);
  if (!salt.ok()) return salt.status();
  int32_t iterations = 0;
  for (char c : attrs[2].second) {
    if (c < '0' || c > '9' || iterations > kScramMaxIterations) {
      return Status(Errc::invalid_argument, "bad iteration count");
    }
    iterations = iterations * 10 + (c - '0');
  }
  if (iterations < kScramMinIterations || iterations > kScramMaxIterations) {
    return Status(Errc::invalid_argument, "iteration count outside [4096, 16384]");
  }
  auto salted = salted_password(m_, password_, *salt, iterations);
  if (!salted.ok()) return salted.status();
  const std::string without_proof = "c=biws,r=" + std::string(nonce);
  const std::string auth_message =
      client_first_bare_ + "," + std::string(server_first) + "," + without_proof;
  const std::string client_key = hmac(m_, *salted, "Client Key");
  const std::string stored_key = hash(m_, client_key);
  const std::string proof = xor_bytes(client_key, hmac(m_, stored_key, auth_message));
  expected_server_signature_ = hmac(m_, hmac(m_, *salted, "Server Key"), auth_message);
  return without_proof + ",p=" + base64_encode(proof);
}

Status ScramClient::verify(std::string_view server_final) const {
  if (server_final.substr(0, 2) != "v=") {
    return Status(Errc::invalid_argument, "server refused: " + std::string(server_final));
  }
  auto sig = base64_decode(server_final.substr(2));
  if (!sig.ok() || !constant_time_equal(*sig, expected_server_signature_)) {
    return Status(Errc::invalid_argument, "server signature does not verify");
  }
  return Status::Ok();
}

Result<PlainCredentials> parse_plain(std::string_view message) {
  const size_t a = message.find('\0');
  const size_t b = a == std::string_view::npos ? a : message.find('\0', a + 1);
  if (b == std::string_view::npos || message.find('\0', b + 1) != std::string_view::npos) {
    return Status(Errc::invalid_argument, "malformed PLAIN message");
  }
  const std::string_view authzid = message.substr(0, a);
  PlainCredentials c{std::string(message.substr(a + 1, b - a - 1)),
                     std::string(message.substr(b + 1))};
  if (c.user.empty() || c.password.empty()) {
    return Status(Errc::invalid_argument, "PLAIN user and password must not be empty");
  }
  if (!authzid.empty() && authzid != c.user) {
    return Status(Errc::invalid_argument, "PLAIN authorization id differs from the user");
  }
  return c;
}

}  // namespace strata::protocol::sasl
