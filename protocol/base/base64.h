// Standard base64 (RFC 4648, with padding), on OpenSSL's EVP block codec: SCRAM messages and
// etcd's JSON gateway both carry bytes this way. Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

#include "protocol/base/result.h"

namespace strata {

std::string base64_encode(std::string_view bytes);
// Fails (corruption) on characters outside the alphabet or a length not a multiple of 4.
Result<std::string> base64_decode(std::string_view text);

}  // namespace strata
