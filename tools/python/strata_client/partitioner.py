"""Key -> partition functions of primary-key tables, ports of protocol/pk/partitioner.cc.

- ``murmur2``: Java's ``Utils.murmur2`` (also kafka-python's and KafkaJS's default), partition
  ``(murmur2(key) & 0x7fffffff) % n``.
- ``crc32``: librdkafka's ``consistent_random``: zlib CRC-32 of the key, taken unsigned, ``% n``.
"""
from __future__ import annotations

import zlib

__all__ = ["murmur2", "crc32", "partition_for_key"]

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Java's Utils.murmur2 of `data`, as a signed 32-bit int."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length // 4
    for i in range(n4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def crc32(data: bytes) -> int:
    """zlib CRC-32 of `data` (unsigned)."""
    return zlib.crc32(data) & _MASK


def partition_for_key(partitioner: str, key: bytes, n: int) -> int:
    """The partition (0..n-1) that owns `key` under `partitioner` ("murmur2", "" = murmur2, or
    "crc32"); raises ValueError for another name."""
    if n <= 1:
        return 0
    if partitioner == "crc32":
        return crc32(key) % n
    if partitioner in ("murmur2", ""):
        return (murmur2(key) & 0x7FFFFFFF) % n
    raise ValueError("unsupported partitioner %r" % partitioner)
