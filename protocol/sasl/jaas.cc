#include "protocol/sasl/jaas.h"

#include <cctype>

namespace strata::protocol::sasl {

namespace {

bool space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-' ||
         c == '$';
}

struct Cursor {
  std::string_view s;
  size_t i = 0;
  void skip() {
    while (i < s.size() && space(s[i])) ++i;
  }
  bool done() const { return i >= s.size(); }
  std::string word() {
    size_t b = i;
    while (i < s.size() && word_char(s[i])) ++i;
    return std::string(s.substr(b, i - b));
  }
};

Result<JaasConfig> fail(const std::string& why) {
  return Result<JaasConfig>(Errc::invalid_argument, "JAAS config: " + why);
}

}  // namespace

Result<JaasConfig> parse_jaas(std::string_view text) {
  Cursor c{text};
  JaasConfig out;
  c.skip();
  out.login_module = c.word();
  if (out.login_module.empty()) return fail("expected a login module class name");
  c.skip();
  out.flag = c.word();
  if (out.flag != "required" && out.flag != "requisite" && out.flag != "sufficient" &&
      out.flag != "optional") {
    return fail("expected a control flag (required, requisite, sufficient, optional) after " +
                out.login_module);
  }
  for (;;) {
    c.skip();
    if (c.done()) return fail("missing ';' at the end");
    if (c.s[c.i] == ';') {
      ++c.i;
      c.skip();
      if (!c.done()) return fail("only one login module is supported");
      return out;
    }
    std::string key = c.word();
    if (key.empty()) return fail("expected an option name at offset " + std::to_string(c.i));
    c.skip();
    if (c.done() || c.s[c.i] != '=') return fail("expected '=' after option " + key);
    ++c.i;
    c.skip();
    std::string value;
    if (!c.done() && c.s[c.i] == '"') {
      ++c.i;
      bool closed = false;
      while (!c.done()) {
        char ch = c.s[c.i++];
        if (ch == '\\' && !c.done()) {
          value.push_back(c.s[c.i++]);
        } else if (ch == '"') {
          closed = true;
          break;
        } else {
          value.push_back(ch);
        }
      }
      if (!closed) return fail("unterminated quoted value of option " + key);
    } else {
      value = c.word();
      if (value.empty()) return fail("option " + key + " has no value");
    }
    if (!out.options.emplace(key, value).second) return fail("option " + key + " given twice");
  }
}

std::optional<std::string> JaasConfig::plain_password(const std::string& user) const {
  auto it = options.find("user_" + user);
  if (it == options.end()) return std::nullopt;
  return it->second;
}

std::string JaasConfig::option(const std::string& key) const {
  auto it = options.find(key);
  return it == options.end() ? std::string() : it->second;
}

}  // namespace strata::protocol::sasl
