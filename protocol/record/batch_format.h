// RecordBatch v2 ("magic 2") byte layout: the on-wire and on-disk unit of Kafka data.
//
// All integers are big-endian. Offsets are from the start of the batch:
//
//   0                   8          12                    16     17         21          23
//   +-------------------+----------+---------------------+------+----------+-----------+
//   | baseOffset int64  | batchLen | partitionLeaderEpoch| magic| crc      | attributes|
//   |                   | int32    | int32               | int8 | uint32   | int16     |
//   +-------------------+----------+---------------------+------+----------+-----------+
//   23                  27                    35                   43
//   +-------------------+---------------------+--------------------+
//   | lastOffsetDelta   | baseTimestamp int64 | maxTimestamp int64 |
//   | int32             |                     |                    |
//   +-------------------+---------------------+--------------------+
//   43                  51             53              57            61
//   +-------------------+--------------+---------------+-------------+---------------------+
//   | producerId int64  | producerEpoch| baseSequence  | recordCount | records ...         |
//   |                   | int16        | int32         | int32       | (maybe compressed)  |
//   +-------------------+--------------+---------------+-------------+---------------------+
//
// batchLength counts the bytes after the batchLength field, so a batch occupies
// batchLength + 12 bytes. The CRC-32C covers bytes [21, end): attributes through the last record.
// baseOffset, batchLength and partitionLeaderEpoch are outside the CRC so a broker can assign
// offsets and stamp the leader epoch in place without recomputing it.
//
// attributes (int16):
//   bits 0-2  compression codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)
//   bit  3    timestamp type (0 CreateTime, 1 LogAppendTime)
//   bit  4    isTransactional
//   bit  5    isControlBatch
//   bit  6    hasDeleteHorizonMs (compaction: baseTimestamp holds the delete horizon)
//   bits 7-15 unused (0)
//
// Each record inside (after decompression) is:
//   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//   keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value |
//   headerCount varint | headers: [keyLength varint | key | valueLength varint (-1=null) | value]
// where varint/varlong are zig-zag LEB128 and `length` counts the bytes after itself.
//
// Owned by the record work; constants only, usable from any thread.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::protocol::batch_format {

inline constexpr size_t kBaseOffsetOffset = 0;
inline constexpr size_t kBatchLengthOffset = 8;
inline constexpr size_t kPartitionLeaderEpochOffset = 12;
inline constexpr size_t kMagicOffset = 16;
inline constexpr size_t kCrcOffset = 17;
inline constexpr size_t kAttributesOffset = 21;
inline constexpr size_t kLastOffsetDeltaOffset = 23;
inline constexpr size_t kBaseTimestampOffset = 27;
inline constexpr size_t kMaxTimestampOffset = 35;
inline constexpr size_t kProducerIdOffset = 43;
inline constexpr size_t kProducerEpochOffset = 51;
inline constexpr size_t kBaseSequenceOffset = 53;
inline constexpr size_t kRecordCountOffset = 57;
inline constexpr size_t kRecordsOffset = 61;

inline constexpr size_t kHeaderSize = 61;
// Bytes before and including batchLength: batch size = batchLength + kLogOverhead.
inline constexpr size_t kLogOverhead = 12;
// The CRC covers [kCrcCoveredOffset, end of batch).
inline constexpr size_t kCrcCoveredOffset = kAttributesOffset;

inline constexpr int8_t kMagicV2 = 2;

// Attribute bits.
inline constexpr int16_t kCompressionMask = 0x07;
inline constexpr int16_t kTimestampTypeBit = 0x08;
inline constexpr int16_t kTransactionalBit = 0x10;
inline constexpr int16_t kControlBit = 0x20;
inline constexpr int16_t kDeleteHorizonBit = 0x40;

// Values used when a batch has no producer / no timestamp.
inline constexpr int64_t kNoProducerId = -1;
inline constexpr int16_t kNoProducerEpoch = -1;
inline constexpr int32_t kNoSequence = -1;
inline constexpr int64_t kNoTimestamp = -1;
inline constexpr int32_t kNoPartitionLeaderEpoch = -1;

}  // namespace strata::protocol::batch_format
