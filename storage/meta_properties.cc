// meta.properties reading, writing and checking (see meta_properties.h).
#include "storage/meta_properties.h"

#include <charconv>
#include <map>

#include "protocol/wire/uuid.h"
#include "storage/file_names.h"
#include "storage/file_util.h"

namespace strata::storage {

std::string format_meta_properties(const MetaProperties& meta) {
  return "#\n#Written by strata\nversion=" + std::to_string(meta.version) +
         "\ncluster.id=" + meta.cluster_id + "\nnode.id=" + std::to_string(meta.node_id) + "\n";
}

Result<MetaProperties> parse_meta_properties(std::string_view text) {
  std::map<std::string, std::string, std::less<>> kv;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    kv[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  auto int_of = [&](std::string_view key, int32_t& out) {
    auto it = kv.find(key);
    if (it == kv.end()) return false;
    auto [p, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), out);
    return ec == std::errc() && p == it->second.data() + it->second.size();
  };
  MetaProperties meta;
  if (!int_of("version", meta.version) || !int_of("node.id", meta.node_id) ||
      !kv.contains("cluster.id") || kv["cluster.id"].empty()) {
    return Status(Errc::corruption, "meta.properties lacks version, node.id or cluster.id");
  }
  meta.cluster_id = kv["cluster.id"];
  return meta;
}

Result<std::string> ensure_meta_properties(Env* env, const std::vector<std::string>& log_dirs,
                                           int32_t node_id) {
  std::string cluster_id;
  std::vector<std::string> missing;
  for (const auto& dir : log_dirs) {
    const std::string path = join_path(dir, kMetaProperties);
    auto text = read_file_to_string(env, path);
    if (!text.ok()) {
      if (text.status().code() != Errc::not_found) return text.status();
      missing.push_back(path);
      continue;
    }
    auto meta = parse_meta_properties(*text);
    if (!meta.ok()) return Status(Errc::corruption, path + ": " + meta.status().message());
    if (meta->node_id != node_id) {
      return Status(Errc::invalid_argument,
                    path + " belongs to node.id=" + std::to_string(meta->node_id) +
                        ", this broker is node.id=" + std::to_string(node_id));
    }
    if (!cluster_id.empty() && cluster_id != meta->cluster_id) {
      return Status(Errc::invalid_argument, "log dirs disagree on cluster.id (" + cluster_id +
                                                " vs " + meta->cluster_id + " in " + path + ")");
    }
    cluster_id = meta->cluster_id;
  }
  if (cluster_id.empty()) cluster_id = protocol::Uuid::random().to_string();
  for (const auto& path : missing) {
    STRATA_RETURN_IF_ERROR(write_file_atomically(
        env, path, format_meta_properties(MetaProperties{1, cluster_id, node_id})));
  }
  return cluster_id;
}

}  // namespace strata::storage
