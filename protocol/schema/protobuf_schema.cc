#include "protocol/schema/protobuf_schema.h"

#include <google/protobuf/compiler/parser.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "protocol/base/base64.h"
#include "protocol/schema/protobuf_file.h"

namespace strata::protocol::schema {

namespace {

namespace pb = google::protobuf;

constexpr int kMaxNesting = 32;
// The name a schema's own file has in its pool; a referencing schema renames it to its import
// path. (A descriptor registration keeps the name its client gave.)
constexpr const char* kRootName = "registered_schema.proto";
// Files a self-contained text may carry besides its own.
constexpr size_t kMaxSelfContainedImports = 256;

Status bad(std::string message) { return Status(Errc::invalid_argument, std::move(message)); }

class TextErrors : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (first.empty()) {
      first =
          "line " + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message;
    }
  }
  std::string first;
};

class BuildErrors : public pb::DescriptorPool::ErrorCollector {
 public:
  void AddError(const std::string& filename, const std::string& element_name, const pb::Message*,
                ErrorLocation, const std::string& message) override {
    if (first.empty()) {
      first = element_name.empty() ? filename + ": " + message
                                   : filename + ": " + element_name + ": " + message;
    }
  }
  std::string first;
};

// Braces nest definitions (and option aggregates); counting them all, even inside strings and
// comments, over-estimates the nesting, which only makes the refusal earlier. The parser itself
// recurses per level, so this bounds its stack before it runs.
bool nests_too_deep(std::string_view text) {
  int depth = 0;
  for (char c : text) {
    if (c == '{' && ++depth > kMaxNesting) return true;
    if (c == '}') --depth;
  }
  return false;
}

int message_depth(const pb::DescriptorProto& m, int depth) {
  int deepest = depth;
  if (depth > kMaxNesting) return depth;
  for (const auto& n : m.nested_type()) deepest = std::max(deepest, message_depth(n, depth + 1));
  return deepest;
}

bool looks_base64(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/' && c != '=') {
      return false;
    }
  }
  return true;
}

Result<pb::FileDescriptorProto> read_file(std::string_view text) {
  pb::FileDescriptorProto proto;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return bad("empty schema");
  if (looks_base64(text)) {
    auto bytes = base64_decode(text);
    if (!bytes.ok() || !proto.ParseFromString(*bytes)) {
      return bad("not .proto text, nor a base64 serialized FileDescriptorProto");
    }
    for (const auto& m : proto.message_type()) {
      if (message_depth(m, 1) > kMaxNesting) {
        return bad("messages nest deeper than " + std::to_string(kMaxNesting) + " levels");
      }
    }
    if (proto.name().empty()) proto.set_name(kRootName);
    return proto;
  }
  if (nests_too_deep(text)) {
    return bad("definitions nest deeper than " + std::to_string(kMaxNesting) + " levels");
  }
  pb::io::ArrayInputStream in(text.data(), static_cast<int>(text.size()));
  TextErrors errors;
  pb::io::Tokenizer tokens(&in, &errors);
  pb::compiler::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.Parse(&tokens, &proto) || !errors.first.empty()) {
    return bad(errors.first.empty() ? std::string("does not parse as .proto text") : errors.first);
  }
  proto.set_name(kRootName);
  return proto;
}

// One of libprotobuf's own google/protobuf files, as linked in (a reference registered under
// such a name is not one).
bool is_well_known(const pb::FileDescriptorProto& proto) {
  if (proto.name().rfind("google/protobuf/", 0) != 0) return false;
  const auto* wk = pb::DescriptorPool::generated_pool()->FindFileByName(proto.name());
  if (!wk) return false;
  pb::FileDescriptorProto linked;
  wk->CopyTo(&linked);
  return linked.SerializeAsString() == proto.SerializeAsString();
}

// Gathers the files `proto` imports (recursively, imports first) into `out`, named as imported.
class Imports {
 public:
  explicit Imports(const std::vector<ProtobufSchema::Reference>& refs) : refs_(refs) {}

  Status add_imports_of(const pb::FileDescriptorProto& proto) {
    for (const auto& name : proto.dependency()) {
      if (auto s = add(name); !s.ok()) return s;
    }
    return Status::Ok();
  }

  std::vector<pb::FileDescriptorProto> take() { return std::move(out_); }

 private:
  Status add(const std::string& name) {
    for (const auto& [ref_name, ref] : refs_) {
      if (ref_name != name) continue;
      const auto& theirs = ref->file().protos;
      // Its imports carry their import names already; its own file takes the name we import.
      for (size_t i = 0; i + 1 < theirs.size(); ++i) {
        if (auto s = put(theirs[i]); !s.ok()) return s;
      }
      pb::FileDescriptorProto own = theirs.back();
      own.set_name(name);
      return put(own);
    }
    if (const auto* wk = pb::DescriptorPool::generated_pool()->FindFileByName(name);
        wk && name.rfind("google/protobuf/", 0) == 0) {
      pb::FileDescriptorProto proto;
      wk->CopyTo(&proto);
      if (auto s = add_imports_of(proto); !s.ok()) return s;
      return put(proto);
    }
    return bad("import \"" + name +
               "\" is neither a schema reference (by that name) nor a well-known "
               "google/protobuf file");
  }

  Status put(const pb::FileDescriptorProto& proto) {
    auto [it, fresh] = seen_.emplace(proto.name(), proto.SerializeAsString());
    if (fresh) {
      out_.push_back(proto);
    } else if (it->second != proto.SerializeAsString()) {
      return bad("two different files are imported as \"" + proto.name() + "\"");
    }
    return Status::Ok();
  }

  const std::vector<ProtobufSchema::Reference>& refs_;
  std::map<std::string, std::string> seen_;
  std::vector<pb::FileDescriptorProto> out_;
};

}  // namespace

Result<ProtobufSchema> ProtobufSchema::parse(std::string_view text,
                                             const std::vector<Reference>& references) {
  auto root = read_file(text);
  if (!root.ok()) return root.status();
  Imports imports(references);
  if (auto s = imports.add_imports_of(*root); !s.ok()) return s;
  auto file = std::make_shared<detail::ProtoFile>();
  file->protos = imports.take();
  file->protos.push_back(std::move(*root));
  file->pool = std::make_unique<pb::DescriptorPool>();
  BuildErrors errors;
  for (const auto& proto : file->protos) {
    const pb::FileDescriptor* built = file->pool->BuildFileCollectingErrors(proto, &errors);
    if (!built) return bad(errors.first.empty() ? "does not build" : errors.first);
    file->file = built;
  }
  return ProtobufSchema(std::move(file));
}

std::string ProtobufSchema::normalized() const { return file_->file->DebugString(); }

std::string ProtobufSchema::self_contained() const {
  auto imports = nlohmann::json::array();
  for (size_t i = 0; i + 1 < file_->protos.size(); ++i) {
    const auto& proto = file_->protos[i];
    if (is_well_known(proto)) continue;
    const pb::FileDescriptor* f = file_->pool->FindFileByName(proto.name());
    imports.push_back({{"name", proto.name()}, {"schema", f->DebugString()}});
  }
  if (imports.empty()) return normalized();
  return nlohmann::json{{"imports", std::move(imports)}, {"schema", normalized()}}.dump();
}

Result<ProtobufSchema> ProtobufSchema::parse_self_contained(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return parse(text);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  const auto imports = j.is_object() ? j.find("imports") : j.end();
  const auto schema = j.is_object() ? j.find("schema") : j.end();
  if (!j.is_object() || imports == j.end() || !imports->is_array() || schema == j.end() ||
      !schema->is_string()) {
    return bad("a self-contained schema is {\"imports\": [{\"name\", \"schema\"}...], \"schema\"}");
  }
  if (imports->size() > kMaxSelfContainedImports) {
    return bad("more than " + std::to_string(kMaxSelfContainedImports) + " imported files");
  }
  // One pool, the files built in order (each may import those before it, or well-known files):
  // linear in the files, where parsing each with references would rebuild its imports.
  auto file = std::make_shared<detail::ProtoFile>();
  file->pool = std::make_unique<pb::DescriptorPool>();
  std::set<std::string> built;
  BuildErrors errors;
  std::function<Status(pb::FileDescriptorProto, const std::string&)> build =
      [&](pb::FileDescriptorProto proto, const std::string& what) -> Status {
    for (const auto& dep : proto.dependency()) {
      if (built.count(dep)) continue;
      const auto* wk = pb::DescriptorPool::generated_pool()->FindFileByName(dep);
      if (!wk || dep.rfind("google/protobuf/", 0) != 0) {
        return bad(what + ": import \"" + dep + "\" is not among the files before it");
      }
      pb::FileDescriptorProto linked;
      wk->CopyTo(&linked);
      if (auto st = build(std::move(linked), dep); !st.ok()) return st;
    }
    const pb::FileDescriptor* f = file->pool->BuildFileCollectingErrors(proto, &errors);
    if (!f) return bad(what + ": " + (errors.first.empty() ? "does not build" : errors.first));
    built.insert(proto.name());
    file->protos.push_back(std::move(proto));
    file->file = f;
    return Status::Ok();
  };
  for (const auto& imp : *imports) {
    const auto name = imp.is_object() ? imp.find("name") : imp.end();
    const auto body = imp.is_object() ? imp.find("schema") : imp.end();
    if (name == imp.end() || !name->is_string() || body == imp.end() || !body->is_string()) {
      return bad("an import of a self-contained schema is {\"name\", \"schema\"}");
    }
    const std::string what = "import \"" + name->get<std::string>() + "\"";
    auto proto = read_file(body->get_ref<const std::string&>());
    if (!proto.ok()) return bad(what + ": " + proto.status().message());
    proto->set_name(name->get<std::string>());
    if (auto st = build(std::move(*proto), what); !st.ok()) return st;
  }
  auto root = read_file(schema->get_ref<const std::string&>());
  if (!root.ok()) return root.status();
  if (auto st = build(std::move(*root), "the schema"); !st.ok()) return st;
  return ProtobufSchema(std::move(file));
}

}  // namespace strata::protocol::schema
