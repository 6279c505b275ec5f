#include "protocol/base/base64.h"

#include <openssl/evp.h>

namespace strata {

// OpenSSL's codec (libcrypto is a dependency for TLS and SCRAM anyway) rather than our own.
std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return Status(Errc::corruption, "base64 length is not a multiple of 4");
  for (char c : text) {  // EVP_DecodeBlock skips whitespace; we do not accept it
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      return Status(Errc::corruption, "invalid base64");
    }
  }
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return Status(Errc::corruption, "invalid base64");
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') {
    pad = text.size() >= 2 && text[text.size() - 2] == '=' ? 2 : 1;
  }
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace strata
