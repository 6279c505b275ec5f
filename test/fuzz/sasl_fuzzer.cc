// libFuzzer target: the SASL message parsers on arbitrary bytes — PLAIN, SCRAM's client-first and
// client-final on the server side (after a valid first step too), the server's messages on the
// client side, and JAAS config text (what carries PLAIN users and client credentials). Must never
// crash, trip a sanitizer, or complete an exchange without the password.
#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/sasl/jaas.h"
#include "protocol/sasl/scram.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::protocol::sasl;
  const std::string input(reinterpret_cast<const char*>(data), size);
  static const ScramCredential cred =
      *make_scram_credential(ScramMechanism::sha256, "pw", 4096, std::string(16, 's'));
  auto lookup = [](const std::string&) -> std::optional<ScramCredential> { return cred; };
  (void)parse_plain(input);
  if (auto j = parse_jaas(input); j.ok()) (void)j->plain_password("a");
  {
    ScramServer s(ScramMechanism::sha256, lookup, "N");
    if (s.first(input).ok()) (void)s.final(input);
  }
  {
    ScramServer s(ScramMechanism::sha256, lookup, "N");
    if (!s.first("n,,n=a,r=abc").ok()) __builtin_trap();
    auto fin = s.final(input);
    if (fin.ok() || s.complete()) __builtin_trap();  // completing needs the password's proof
  }
  {
    ScramClient c(ScramMechanism::sha256, "a", "pw", "abc");
    (void)c.first();
    if (size < 256) (void)c.final(input);  // a valid one costs 4096 PBKDF2 rounds
    (void)c.verify(input);
  }
  return 0;
}
