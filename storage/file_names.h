// Every on-disk name storage/ uses, built in one place (Kafka's log layout):
//
//   <log.dir>/meta.properties                       version=1, cluster.id, node.id
//   <log.dir>/__strata_topics/<topic-id-hex>.topic  TopicMeta protobuf (first log dir only)
//   <log.dir>/<topic>-<partition>/
//     <20-digit base offset>.log        v2 record batches back to back
//     <20-digit base offset>.index      8-byte entries: int32 relative offset, int32 position
//     <20-digit base offset>.timeindex  12-byte entries: int64 timestamp, int32 rel. offset
//     leader-epoch-checkpoint           "0\n<count>\n<epoch> <start offset>\n..."
//     partition.metadata                "version: 0\ntopic_id: <base64url>\n"
//     recovery-point                    "<offset>\n": everything below it is fsynced
//     log-start-offset                  "<offset>\n": DeleteRecords' log start (<= log end)
//     cleaner-offset-checkpoint         "<offset>\n": compacted below it (<= log end)
//     clean-shutdown                    present only after a clean close()
//     <20-digit offset>.snapshot        idempotent-producer state below that offset
//                                       (named and encoded in producer_state.h)
//   <log.dir>/__strata_producer_ids     "<next unreserved producer id>\n" (first log dir;
//                                       broker/txn/producer_ids.h)
//
// Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::storage {

inline constexpr std::string_view kLogSuffix = ".log";
inline constexpr std::string_view kIndexSuffix = ".index";
inline constexpr std::string_view kTimeIndexSuffix = ".timeindex";
inline constexpr std::string_view kTxnIndexSuffix = ".txnindex";
inline constexpr std::string_view kSummarySuffix = ".stats";  // batch_summary.h
inline constexpr std::string_view kLeaderEpochCheckpoint = "leader-epoch-checkpoint";
inline constexpr std::string_view kPartitionMetadata = "partition.metadata";
inline constexpr std::string_view kRecoveryPointFile = "recovery-point";
inline constexpr std::string_view kCleanShutdownFile = "clean-shutdown";
inline constexpr std::string_view kLogStartOffsetFile = "log-start-offset";
// "<offset>\n": the log is compacted below it (storage/log_cleaner.h).
inline constexpr std::string_view kCleanerCheckpointFile = "cleaner-offset-checkpoint";
inline constexpr std::string_view kMetaProperties = "meta.properties";
// Not a valid partition directory name (no "-<digits>" suffix), so never mistaken for one.
inline constexpr std::string_view kTopicsDir = "__strata_topics";

// "00000000000000000042" for 42.
std::string offset_file_stem(int64_t base_offset);
std::string segment_log_path(const std::string& dir, int64_t base_offset);
std::string segment_index_path(const std::string& dir, int64_t base_offset);
std::string segment_time_index_path(const std::string& dir, int64_t base_offset);
std::string segment_txn_index_path(const std::string& dir, int64_t base_offset);
std::string segment_summary_path(const std::string& dir, int64_t base_offset);

// Parses "<20 digits>.log" into the base offset; nullopt for any other name.
std::optional<int64_t> parse_segment_log_name(std::string_view name);

std::string partition_dir_name(std::string_view topic, int32_t partition);

struct TopicPartitionName {
  std::string topic;
  int32_t partition;
};
// Parses "<topic>-<partition>" (split at the last '-'); nullopt if not of that shape.
std::optional<TopicPartitionName> parse_partition_dir_name(std::string_view name);

}  // namespace strata::storage
