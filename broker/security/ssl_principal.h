// Kafka's ssl.principal.mapping.rules: how the subject of a client certificate (its RFC 2253
// distinguished name, e.g. "CN=alice,OU=eng,O=Strata") becomes the user name of an mTLS
// connection. A comma-separated list of rules, the first that matches wins:
//   RULE:pattern/replacement/[L|U]   pattern is a regular expression over the whole DN
//                                    (ECMAScript syntax; '/' inside is written '\/'), the
//                                    replacement uses $1.. for groups; L/U lower/upper-cases it
//   DEFAULT                          the DN itself
// A DN that no rule matches is an authentication failure (as Kafka). Immutable after parse();
// any thread.
#pragma once

#include <regex>
#include <string>
#include <vector>

#include "protocol/base/result.h"

namespace strata::broker::security {

class SslPrincipalMapper {
 public:
  static Result<SslPrincipalMapper> parse(const std::string& rules);
  Result<std::string> map(const std::string& dn) const;

 private:
  struct Rule {
    bool is_default = false;
    std::regex pattern;
    std::string replacement;
    char casing = 0;  // 0, 'L' or 'U'
  };
  std::vector<Rule> rules_;
};

}  // namespace strata::broker::security
