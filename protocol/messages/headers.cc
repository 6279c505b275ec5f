#include "protocol/messages/headers.h"

#include "protocol/ext/api_keys.h"
#include "protocol/messages/api_table.h"

namespace strata::protocol {

void RequestHeader::decode(Reader& r, int16_t header_version) {
  request_api_key = r.read_int16();
  request_api_version = r.read_int16();
  correlation_id = r.read_int32();
  client_id.reset();
  if (header_version >= 1) client_id = r.read_nullable_string();
  if (header_version >= 2) r.skip_tagged_fields();
}

void RequestHeader::encode(Writer& w, int16_t header_version) const {
  w.write_int16(request_api_key);
  w.write_int16(request_api_version);
  w.write_int32(correlation_id);
  if (header_version >= 1) w.write_nullable_string(client_id);
  if (header_version >= 2) w.write_empty_tagged_fields();
}

size_t RequestHeader::size(int16_t header_version) const {
  size_t n = 8;
  if (header_version >= 1) n += 2 + (client_id ? client_id->size() : 0);
  if (header_version >= 2) n += 1;
  return n;
}

void ResponseHeader::decode(Reader& r, int16_t header_version) {
  correlation_id = r.read_int32();
  if (header_version >= 1) r.skip_tagged_fields();
}

void ResponseHeader::encode(Writer& w, int16_t header_version) const {
  w.write_int32(correlation_id);
  if (header_version >= 1) w.write_empty_tagged_fields();
}

int16_t request_header_version(int16_t api_key, int16_t api_version) {
  if (ext::is_extension_key(api_key)) return 2;  // extension APIs: always flexible
  const ApiInfo* api = find_api(api_key);
  if (api == nullptr) return -1;
  return api_version >= api->flexible_min ? 2 : 1;
}

int16_t response_header_version(int16_t api_key, int16_t api_version) {
  if (ext::is_extension_key(api_key)) return 1;  // extension APIs
  const ApiInfo* api = find_api(api_key);
  if (api == nullptr) return -1;
  if (api_key == 18) return 0;  // ApiVersions: always v0
  return api_version >= api->flexible_min ? 1 : 0;
}

ApiKeyVersion peek_api_key_version(const uint8_t* data, size_t size) {
  Reader r(data, size);
  ApiKeyVersion kv{};
  kv.api_key = r.read_int16();
  kv.api_version = r.read_int16();
  return kv;
}

}  // namespace strata::protocol
