// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of RecordBatch v2.
//
// crc32c() picks, once per process, the SSE4.2 `crc32` instruction (x86-64, runtime CPU check),
// the ARMv8 CRC32C instructions (when compiled with __ARM_FEATURE_CRC32), or a table-driven
// software fallback. All give identical results. Owned by the record work; pure functions, any
// thread may call them concurrently.
#pragma once

#include <cstdint>
#include <span>

namespace strata::protocol {

// Extends `crc` (the CRC-32C of some preceding bytes; 0 for none) with `data`:
//   crc32c(b, crc32c(a)) == crc32c(a ++ b).
// Standard CRC-32C: crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::span<const uint8_t> data, uint32_t crc = 0);

namespace detail {

// The table-driven implementation, always available.
uint32_t crc32c_software(std::span<const uint8_t> data, uint32_t crc = 0);

// Whether this CPU/build has a hardware CRC-32C path.
bool crc32c_hardware_available();

// The hardware implementation; only call when crc32c_hardware_available().
uint32_t crc32c_hardware(std::span<const uint8_t> data, uint32_t crc = 0);

}  // namespace detail
}  // namespace strata::protocol
