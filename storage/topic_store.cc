// Durable topic metadata files (see topic_store.h).
#include "storage/topic_store.h"

#include <algorithm>
#include <cstring>

#include "storage/file_names.h"
#include "storage/file_util.h"
#include "storage/topic_meta.pb.h"

namespace strata::storage {
namespace {
constexpr std::string_view kTopicFileSuffix = ".topic";
}

std::string topic_id_hex(const TopicId& id) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t b : id) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

TopicStore::TopicStore(Env* env, std::string log_dir)
    : env_(env), dir_(join_path(log_dir, kTopicsDir)) {}

std::string TopicStore::path_for(const TopicId& id) const {
  return join_path(dir_, topic_id_hex(id) + std::string(kTopicFileSuffix));
}

Result<std::vector<TopicMeta>> TopicStore::load_all() {
  if (!env_->is_directory(dir_)) {
    STRATA_RETURN_IF_ERROR(env_->create_dir(dir_));
    STRATA_RETURN_IF_ERROR(env_->sync_dir(parent_dir(dir_)));
  }
  auto names = env_->list_dir(dir_);
  if (!names.ok()) return names.status();
  std::vector<TopicMeta> out;
  for (const auto& name : *names) {
    if (!name.ends_with(kTopicFileSuffix)) continue;  // e.g. a leftover .tmp from a crash
    auto data = read_file_to_string(env_, join_path(dir_, name));
    if (!data.ok()) return data.status();
    pb::TopicMeta msg;
    if (!msg.ParseFromString(*data) || msg.topic_id().size() != 16 || msg.partitions() <= 0) {
      return Status(Errc::corruption, "bad topic metadata file " + join_path(dir_, name));
    }
    TopicMeta meta;
    meta.name = msg.name();
    std::memcpy(meta.topic_id.data(), msg.topic_id().data(), 16);
    meta.partitions = msg.partitions();
    meta.configs.insert(msg.configs().begin(), msg.configs().end());
    meta.created_ms = msg.created_ms();
    out.push_back(std::move(meta));
  }
  std::sort(out.begin(), out.end(),
            [](const TopicMeta& a, const TopicMeta& b) { return a.name < b.name; });
  return out;
}

Status TopicStore::put(const TopicMeta& meta) {
  pb::TopicMeta msg;
  msg.set_name(meta.name);
  msg.set_topic_id(std::string(reinterpret_cast<const char*>(meta.topic_id.data()), 16));
  msg.set_partitions(meta.partitions);
  for (const auto& [k, v] : meta.configs) (*msg.mutable_configs())[k] = v;
  msg.set_created_ms(meta.created_ms);
  std::string data;
  if (!msg.SerializeToString(&data)) return Status(Errc::io_error, "cannot serialise topic");
  return write_file_atomically(env_, path_for(meta.topic_id), data);
}

Status TopicStore::remove(const TopicId& id) {
  Status st = env_->remove_file(path_for(id));
  if (!st.ok() && st.code() != Errc::not_found) return st;
  return env_->sync_dir(dir_);
}

}  // namespace strata::storage
