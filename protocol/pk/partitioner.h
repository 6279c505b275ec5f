// Key -> partition functions of primary-key tables: a key must live in exactly one partition, the
// one its producer's partitioner picks. murmur2 = Java's Utils.murmur2 (also kafka-python, KafkaJS)
// with toPositive(h) % n; crc32 = librdkafka's consistent_random (zlib CRC-32 of the key % n).
// A wire fact: producers and the client library route keys with it, the broker rejects a record
// sent to another partition. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <span>

#include "protocol/pk/table_keys.h"

namespace strata::protocol::pk {

int32_t murmur2(std::span<const uint8_t> key);
uint32_t crc32_of(std::span<const uint8_t> key);
// The partition (0..n-1) that owns `key`; n >= 1.
int32_t partition_for_key(Partitioner p, std::span<const uint8_t> key, int32_t n);

}  // namespace strata::protocol::pk
