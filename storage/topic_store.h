// TopicStore: durable topic metadata (name, 16-byte topic id, partition count, topic configs,
// creation time). One protobuf file per topic, `<log dir>/__strata_topics/<topic-id-hex>.topic`
// (see topic_meta.proto), written atomically (tmp + fsync + rename + dir fsync), so a crash leaves
// each topic either fully described or absent.
//
// Owned by LogManager. Not internally synchronised: LogManager serialises calls under its mutex.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/base/result.h"
#include "storage/env.h"

namespace strata::storage {

using TopicId = std::array<uint8_t, 16>;

struct TopicMeta {
  std::string name;
  TopicId topic_id{};
  int32_t partitions = 0;
  std::map<std::string, std::string> configs;
  int64_t created_ms = 0;
};

class TopicStore {
 public:
  // `log_dir` is the directory the metadata directory lives in (the first log dir).
  TopicStore(Env* env, std::string log_dir);

  // Creates the metadata directory if missing and reads every topic file (sorted by name).
  Result<std::vector<TopicMeta>> load_all();
  Status put(const TopicMeta& meta);
  Status remove(const TopicId& id);

  const std::string& dir() const { return dir_; }

 private:
  std::string path_for(const TopicId& id) const;

  Env* env_;
  std::string dir_;
};

// Lower-case hex of the 16 id bytes (file names).
std::string topic_id_hex(const TopicId& id);

}  // namespace strata::storage
