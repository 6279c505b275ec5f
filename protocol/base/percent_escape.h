// Percent-escaping of names inside our own text encodings (ACL lines, SCRAM credential files and
// etcd keys, client-quota entities) and URL path segments: every byte an encoding does not keep
// becomes `%XX` (two upper-case hex digits), so a name can hold separators, control bytes or
// non-ASCII and still sit in one field or one key segment. Each encoding chooses which bytes it
// keeps; '%' is never kept. Decoding is one rule for all of them: `%XX` (either case) becomes its
// byte and every other byte stands for itself, so a decoder also accepts text written before an
// encoding's kept set changed. Pure functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace strata {

// Which bytes an encoding writes as they are.
using KeepByte = bool (*)(unsigned char c);

// Printable ASCII (0x21..0x7e) other than '%' and the bytes of `separators`: what an encoding
// keeps when only its own separators must not appear.
constexpr bool printable_except(unsigned char c, std::string_view separators) {
  return c > 0x20 && c < 0x7f && c != '%' &&
         separators.find(static_cast<char>(c)) == separators.npos;
}

// RFC 3986's unreserved bytes: what a URL path segment keeps (Schema Registry subjects in paths).
constexpr bool url_unreserved(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.' || c == '~';
}

std::string percent_escape(std::string_view s, KeepByte keep);
// nullopt on a '%' not followed by two hex digits.
std::optional<std::string> percent_unescape(std::string_view s);

}  // namespace strata
