// Kafka request and response headers, and which header version each (api, version) uses.
// RequestHeader v1/v2: client_id is ALWAYS an int16-length nullable string (even in v2, where a
// tagged-field section follows). ResponseHeader v0 = correlation id; v1 adds empty tagged fields.
// ApiVersions responses always use header v0 so any client can parse them.
// Value types and pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/wire/reader.h"
#include "protocol/wire/writer.h"

namespace strata::protocol {

struct RequestHeader {
  int16_t request_api_key = 0;
  int16_t request_api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string> client_id;

  // header_version 0, 1 or 2 (0 has no client_id; 2 adds a tagged-field section, unknown tags
  // skipped). Throws DecodeError on malformed input.
  void decode(Reader& r, int16_t header_version);
  void encode(Writer& w, int16_t header_version) const;
  size_t size(int16_t header_version) const;
  bool operator==(const RequestHeader&) const = default;
};

struct ResponseHeader {
  int32_t correlation_id = 0;

  void decode(Reader& r, int16_t header_version);
  void encode(Writer& w, int16_t header_version) const;
  size_t size(int16_t header_version) const { return header_version >= 1 ? 5 : 4; }
  bool operator==(const ResponseHeader&) const = default;
};

// Request header version for (api_key, api_version): 2 for flexible versions, else 1.
// -1 when the api has no schema (unknown key).
int16_t request_header_version(int16_t api_key, int16_t api_version);
// Response header version: 1 for flexible versions, else 0; ApiVersions (18) is always 0.
// -1 when the api has no schema.
int16_t response_header_version(int16_t api_key, int16_t api_version);

// Peeks the api key and version of a request body without decoding anything else
// (the first 4 bytes of every request header). Throws DecodeError when shorter.
struct ApiKeyVersion {
  int16_t api_key;
  int16_t api_version;
};
ApiKeyVersion peek_api_key_version(const uint8_t* data, size_t size);

}  // namespace strata::protocol
