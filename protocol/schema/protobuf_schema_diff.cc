// Protobuf compatibility as Confluent's provider decides it: the writer's file ("original") and
// the reader's ("update") are diffed — package, messages by name, fields by number, oneofs by
// name — and each difference is classified. Only the incompatible kinds are reported (the
// compatible ones: messages, enums, enum constants, fields and oneofs added or removed, field
// renames, oneof members added, string/bytes label changes).
#include <google/protobuf/descriptor.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "protocol/schema/protobuf_file.h"
#include "protocol/schema/protobuf_schema.h"

namespace strata::protocol::schema {

namespace {

namespace pb = google::protobuf;
using Field = pb::FieldDescriptor;
using Message = pb::Descriptor;

class Diff {
 public:
  std::vector<std::string> reasons;

  void files(const pb::FileDescriptor& original, const pb::FileDescriptor& update) {
    if (original.package() != update.package()) add("PACKAGE_CHANGED");
    std::map<std::string, const Message*> mine;
    for (int i = 0; i < update.message_type_count(); ++i) {
      mine.emplace(update.message_type(i)->name(), update.message_type(i));
    }
    for (int i = 0; i < original.message_type_count(); ++i) {
      const Message* o = original.message_type(i);
      auto u = mine.find(o->name());
      Path p(*this, o->name());
      if (u == mine.end()) {
        add("MESSAGE_REMOVED");
      } else {
        message(*o, *u->second);
      }
    }
  }

 private:
  // Enters one step of the "#/..." path for the scope of the object.
  struct Path {
    Path(Diff& d, const std::string& step) : d_(d) { d_.path_.push_back(step); }
    ~Path() { d_.path_.pop_back(); }
    Diff& d_;
  };

  enum class Label { none, optional, required, repeated };
  enum class Kind { scalar, map, message };

  void add(const char* change) {
    std::string where = "#";
    for (const auto& step : path_) where += "/" + step;
    reasons.push_back(std::string(change) + " at " + where);
  }

  // Wire's parser (which Confluent's diff reads) gives proto3 fields without a label, and
  // oneof members, no label at all; label changes count only between two explicit labels.
  static Label label(const Field& f) {
    if (f.is_repeated()) return Label::repeated;
    if (f.is_required()) return Label::required;
    if (f.real_containing_oneof()) return Label::none;
    if (f.file()->syntax() == pb::FileDescriptor::SYNTAX_PROTO3 && !f.has_optional_keyword()) {
      return Label::none;
    }
    return Label::optional;
  }

  static Kind kind(const Field& f) {
    if (f.is_map()) return Kind::map;
    if (f.type() == Field::TYPE_MESSAGE || f.type() == Field::TYPE_GROUP) return Kind::message;
    return Kind::scalar;  // enums are numbers on the wire
  }

  // Scalar groups whose wire encodings read as each other.
  enum class ScalarKind { number, signed_number, string_or_bytes, fixed32, fixed64, flt, dbl };
  static ScalarKind scalar_kind(const Field& f) {
    switch (f.type()) {
      case Field::TYPE_SINT32:
      case Field::TYPE_SINT64:
        return ScalarKind::signed_number;
      case Field::TYPE_STRING:
      case Field::TYPE_BYTES:
        return ScalarKind::string_or_bytes;
      case Field::TYPE_FIXED32:
      case Field::TYPE_SFIXED32:
        return ScalarKind::fixed32;
      case Field::TYPE_FIXED64:
      case Field::TYPE_SFIXED64:
        return ScalarKind::fixed64;
      case Field::TYPE_FLOAT:
        return ScalarKind::flt;
      case Field::TYPE_DOUBLE:
        return ScalarKind::dbl;
      default:
        return ScalarKind::number;  // int32/64, uint32/64, bool, enum
    }
  }

  static std::string local_name(const Message& m) {
    const std::string& pkg = m.file()->package();
    return pkg.empty() ? m.full_name() : m.full_name().substr(pkg.size() + 1);
  }

  void message(const Message& original, const Message& update) {
    if (visited_.emplace(&original, &update).second) fields(original, update);
    std::map<std::string, const Message*> nested;
    for (int i = 0; i < update.nested_type_count(); ++i) {
      if (!update.nested_type(i)->options().map_entry()) {
        nested.emplace(update.nested_type(i)->name(), update.nested_type(i));
      }
    }
    for (int i = 0; i < original.nested_type_count(); ++i) {
      const Message* o = original.nested_type(i);
      if (o->options().map_entry()) continue;
      Path p(*this, o->name());
      auto u = nested.find(o->name());
      if (u == nested.end()) {
        add("MESSAGE_REMOVED");
      } else {
        message(*o, *u->second);
      }
    }
  }

  void fields(const Message& original, const Message& update) {
    // Fields outside (real) oneofs by number, as Wire lists them apart from oneof members.
    std::map<int, const Field*> original_plain, update_plain, original_in_oneof;
    for (int i = 0; i < original.field_count(); ++i) {
      const Field* f = original.field(i);
      (f->real_containing_oneof() ? original_in_oneof : original_plain)[f->number()] = f;
    }
    for (int i = 0; i < update.field_count(); ++i) {
      const Field* f = update.field(i);
      if (!f->real_containing_oneof()) update_plain[f->number()] = f;
    }
    std::map<std::string, const pb::OneofDescriptor*> original_oneofs;
    for (int i = 0; i < original.real_oneof_decl_count(); ++i) {
      original_oneofs[original.oneof_decl(i)->name()] = original.oneof_decl(i);
    }
    for (int i = 0; i < update.real_oneof_decl_count(); ++i) {
      const pb::OneofDescriptor* oneof = update.oneof_decl(i);
      Path p(*this, oneof->name());
      int moved = 0;
      int existing = 0;
      for (int k = 0; k < oneof->field_count(); ++k) {
        const int number = oneof->field(k)->number();
        if (original_plain.erase(number)) {
          ++moved;
        } else if (original_in_oneof.count(number)) {
          ++existing;
        }
      }
      if (moved > 1) {
        add("MULTIPLE_FIELDS_MOVED_TO_ONEOF");
      } else if (moved == 1 && existing > 0) {
        add("FIELD_MOVED_TO_EXISTING_ONEOF");
      }
      if (auto o = original_oneofs.find(oneof->name()); o != original_oneofs.end()) {
        oneof_members(*o->second, *oneof);
      }
    }
    for (const auto& [number, o] : original_plain) {
      Path p(*this, std::to_string(number));
      auto u = update_plain.find(number);
      if (u == update_plain.end()) {
        if (o->is_required()) add("REQUIRED_FIELD_REMOVED");
      } else {
        field(*o, *u->second);
      }
    }
    for (const auto& [number, u] : update_plain) {
      Path p(*this, std::to_string(number));
      if (u->is_required() && !original_plain.count(number)) {
        add("REQUIRED_FIELD_ADDED");
      }
    }
  }

  void oneof_members(const pb::OneofDescriptor& original, const pb::OneofDescriptor& update) {
    for (int k = 0; k < original.field_count(); ++k) {
      const Field* o = original.field(k);
      Path p(*this, std::to_string(o->number()));
      const Field* u = nullptr;
      for (int j = 0; j < update.field_count(); ++j) {
        if (update.field(j)->number() == o->number()) u = update.field(j);
      }
      if (!u) {
        add("ONEOF_FIELD_REMOVED");
      } else {
        field(*o, *u);
      }
    }
  }

  void field(const Field& original, const Field& update) {
    types(label(original), label(update), original, update);
  }

  void types(Label original_label, Label update_label, const Field& original, const Field& update) {
    const Kind k = kind(original);
    if (k != kind(update)) {
      add("FIELD_KIND_CHANGED");
      return;
    }
    if (k == Kind::map) {
      const Message& om = *original.message_type();
      const Message& um = *update.message_type();
      types(Label::none, Label::none, *om.map_key(), *um.map_key());
      types(Label::none, Label::none, *om.map_value(), *um.map_value());
    } else if (k == Kind::scalar) {
      const ScalarKind sk = scalar_kind(original);
      if (sk != scalar_kind(update)) {
        add("FIELD_SCALAR_KIND_CHANGED");
      } else if (original_label != Label::none && update_label != Label::none &&
                 original_label != update_label && sk != ScalarKind::string_or_bytes) {
        add("FIELD_NUMERIC_LABEL_CHANGED");
      }
    } else {
      const Message& om = *original.message_type();
      const Message& um = *update.message_type();
      if (local_name(om) != local_name(um)) {
        add("FIELD_NAMED_TYPE_CHANGED");
        return;
      }
      const size_t before = reasons.size();
      message(om, um);
      if (reasons.size() != before) add("FIELD_NAMED_TYPE_CHANGED");
    }
  }

  std::vector<std::string> path_;
  std::set<std::pair<const Message*, const Message*>> visited_;
};

}  // namespace

std::vector<std::string> protobuf_schema_incompatibilities(const ProtobufSchema& reader,
                                                           const ProtobufSchema& writer) {
  Diff d;
  d.files(*writer.file().file, *reader.file().file);
  return std::move(d.reasons);
}

}  // namespace strata::protocol::schema
