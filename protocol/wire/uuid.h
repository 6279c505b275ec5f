// Uuid: Kafka's 16-byte UUID (topic ids), printed as 22-char unpadded base64url like Kafka does.
// Value type; thread-compatible. Uuid::random() is safe to call from any thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::protocol {

struct Uuid {
  std::array<uint8_t, 16> bytes{};

  bool operator==(const Uuid&) const = default;
  bool is_zero() const;
  // Kafka's textual form: base64url without padding (22 chars), e.g. "AAAAAAAAAAAAAAAAAAAAAA".
  std::string to_string() const;
  // Parses the 22-char base64url form; nullopt when malformed.
  static std::optional<Uuid> parse(std::string_view text);
  // A random version-4 UUID that is neither the zero UUID, nor Kafka's metadata topic id (1),
  // nor one whose string form starts with '-' (Kafka avoids those for CLI friendliness).
  static Uuid random();
};

}  // namespace strata::protocol
