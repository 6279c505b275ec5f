#include "broker/security/ssl_principal.h"

#include <cctype>

namespace strata::broker::security {

namespace {

// Reads up to the next unescaped '/', unescaping "\/"; other escapes stay for the regex.
bool read_part(const std::string& s, size_t& i, std::string& out) {
  while (i < s.size()) {
    char c = s[i];
    if (c == '\\' && i + 1 < s.size() && s[i + 1] == '/') {
      out.push_back('/');
      i += 2;
      continue;
    }
    if (c == '/') {
      ++i;
      return true;
    }
    out.push_back(c);
    ++i;
  }
  return false;
}

Result<SslPrincipalMapper> bad(const std::string& why) {
  return Result<SslPrincipalMapper>(Errc::invalid_argument, why);
}

}  // namespace

Result<SslPrincipalMapper> SslPrincipalMapper::parse(const std::string& rules) {
  SslPrincipalMapper m;
  size_t i = 0;
  auto skip = [&] {
    while (i < rules.size() && (std::isspace(static_cast<unsigned char>(rules[i])) != 0)) ++i;
  };
  for (;;) {
    skip();
    if (i >= rules.size()) break;
    Rule r;
    if (rules.compare(i, 7, "DEFAULT") == 0) {
      r.is_default = true;
      i += 7;
    } else if (rules.compare(i, 5, "RULE:") == 0) {
      i += 5;
      std::string pattern;
      if (!read_part(rules, i, pattern) || !read_part(rules, i, r.replacement)) {
        return bad("rule at offset " + std::to_string(i) + " is not RULE:pattern/replacement/");
      }
      try {
        r.pattern = std::regex(pattern, std::regex::ECMAScript);
      } catch (const std::regex_error& e) {
        return bad("rule pattern '" + pattern + "' is not a regular expression: " + e.what());
      }
      if (i < rules.size() && (rules[i] == 'L' || rules[i] == 'U')) r.casing = rules[i++];
    } else {
      return bad("expected RULE: or DEFAULT at offset " + std::to_string(i));
    }
    m.rules_.push_back(std::move(r));
    skip();
    if (i >= rules.size()) break;
    if (rules[i] != ',') return bad("expected ',' between rules at offset " + std::to_string(i));
    ++i;
  }
  if (m.rules_.empty()) return bad("no rule (use DEFAULT)");
  return m;
}

Result<std::string> SslPrincipalMapper::map(const std::string& dn) const {
  for (const auto& r : rules_) {
    if (r.is_default) return dn;
    std::smatch match;
    if (!std::regex_match(dn, match, r.pattern)) continue;
    std::string name = match.format(r.replacement);
    for (char& c : name) {
      if (r.casing == 'L') c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (r.casing == 'U') c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return name;
  }
  return Result<std::string>(Errc::invalid_argument,
                             "no ssl.principal.mapping.rules rule matches " + dn);
}

}  // namespace strata::broker::security
