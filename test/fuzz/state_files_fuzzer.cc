// libFuzzer target: every parser of state the broker reads back from disk or from etcd, on
// arbitrary bytes. The first byte picks the parser; the rest is the file or value:
//   producer-state snapshot, consumer-group record, meta.properties, server.properties,
//   leader-epoch-checkpoint, a topic metadata file, dynamic broker configs, cluster records in
//   etcd, the SCRAM credentials file / etcd value and sasl.scram.bootstrap.users, and etcd's
//   gateway JSON (answers and the watch stream split at a chosen byte).
// Each must refuse what it cannot read — never crash, trip a sanitizer or allocate without bound.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "broker/cluster/etcd_json.h"
#include "broker/cluster/records.h"
#include "broker/config/config.h"
#include "broker/config/dynamic_config.h"
#include "broker/group/group.h"
#include "broker/group/group_records.h"
#include "broker/security/scram_admin.h"
#include "broker/security/scram_store.h"
#include "storage/env.h"
#include "storage/leader_epoch_cache.h"
#include "storage/meta_properties.h"
#include "storage/producer_state.h"
#include "storage/topic_store.h"

namespace {

const std::string& scratch() {
  static const std::string root = [] {
    std::string t = (std::filesystem::temp_directory_path() / "strata-fuzz-XXXXXX").string();
    if (!::mkdtemp(t.data())) std::abort();
    return t;
  }();
  return root;
}

void write_file(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void fresh_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::string text(bytes);
  storage::Env* env = storage::default_env();
  switch (data[0] % 10) {
    case 0: {
      storage::ProducerStateTable table;
      (void)table.decode_snapshot(bytes);
      break;
    }
    case 1: {
      broker::group::Group g;
      (void)broker::group::records::decode_group(bytes, g);
      break;
    }
    case 2:
      (void)storage::parse_meta_properties(bytes);
      break;
    case 3:
      (void)broker::parse_config(text, {});
      break;
    case 4: {
      const std::string path = scratch() + "/leader-epoch-checkpoint";
      write_file(path, bytes);
      auto cache = storage::LeaderEpochCache::load(env, path);
      if (cache.ok()) (void)cache->assign(1 << 20, 1 << 30);
      break;
    }
    case 5: {
      const std::string dir = scratch() + "/topics";
      fresh_dir(dir);
      storage::TopicStore store(env, dir);
      storage::TopicMeta meta;
      meta.name = "t";
      meta.partitions = 1;
      if (!store.put(meta).ok()) break;
      for (const auto& f : std::filesystem::directory_iterator(store.dir())) {
        write_file(f.path().string(), bytes);
      }
      (void)store.load_all();
      break;
    }
    case 6: {
      const std::string dir = scratch() + "/dynamic";
      fresh_dir(dir);
      write_file(dir + "/dynamic-broker-configs", bytes);
      broker::BrokerConfig config;
      config.log_dirs = {dir};
      (void)broker::DynamicConfig::load(env, config);
      break;
    }
    case 7:
      (void)broker::cluster::decode_broker(text);
      (void)broker::cluster::decode_controller(text);
      (void)broker::cluster::decode_topic(text);
      (void)broker::cluster::decode_partition(text);
      (void)broker::cluster::decode_counter(text, "next");
      break;
    case 8: {
      const std::string dir = scratch() + "/scram";
      fresh_dir(dir);
      write_file(dir + "/scram-credentials", bytes);
      (void)broker::security::ScramStore::open_file(env, dir);
      (void)broker::security::parse_scram_credential(text);
      (void)broker::security::parse_bootstrap_users(text);
      break;
    }
    default: {
      namespace ej = broker::cluster::etcd_json;
      ej::json j = ej::json::parse(text, nullptr, false);
      if (!j.is_discarded()) {
        (void)ej::error_of(j);
        (void)ej::decode_range(j);
        (void)ej::decode_txn(j);
        (void)ej::decode_watch_message(j);
      }
      ej::ObjectSplitter splitter;
      const size_t cut = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]) % bytes.size();
      (void)splitter.feed(bytes.substr(0, cut));
      (void)splitter.feed(bytes.substr(cut));
      break;
    }
  }
  return 0;
}
