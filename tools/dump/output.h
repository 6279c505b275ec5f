// Output for strata-dump: one report document per run, either JSON (one object, streamed so a
// multi-gigabyte segment never has to fit in memory) or text (Kafka DumpLogSegments-like lines:
// `key: value` pairs in field order). Commands build each item as an ordered_json and hand it here;
// `bytes_field` turns key/value/header bytes into JSON-safe fields (printable text or hex,
// truncated).
//
// Owned by strata-dump (tools/dump). An Output is used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::dump {

using ojson = nlohmann::ordered_json;

enum class Format { text, json };

class Output {
 public:
  Output(Format format, std::FILE* out) : format_(format), out_(out) {}
  Format format() const { return format_; }
  // Whether open_document() was called (an error after that cannot print a JSON error object).
  bool started() const { return started_; }

  // The document: fields and lists, in order. In text mode a field prints as `name: value` and a
  // list item as `<text_prefix><k>: <v> <k>: <v> ...`.
  void open_document();
  void field(std::string_view name, const ojson& value);
  void open_list(std::string_view name);
  void list_item(const ojson& item, std::string_view text_prefix = "");
  void close_list();
  void close_document();

  // One line of `k: v` pairs (text mode rendering of an object).
  static std::string text_line(const ojson& obj);

 private:
  void comma();
  void write(const std::string& s);

  Format format_;
  std::FILE* out_;
  std::vector<bool> need_comma_;  // per open JSON level
  bool started_ = false;
};

// Sets j[name] to the bytes as text when they are printable ASCII, else j[name + "_hex"]; null
// bytes give j[name] = null. Bytes beyond `max_bytes` (0 = no limit) are cut and
// j[name + "_size"] / j[name + "_truncated"] say so.
void bytes_field(ojson& j, const std::string& name, std::optional<std::span<const uint8_t>> bytes,
                 size_t max_bytes);

std::string hex32(uint32_t v);

}  // namespace strata::dump
