#include "tools/dump/output.h"

namespace strata::dump {
namespace {

std::string dump_json(const ojson& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string text_value(const ojson& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    bool plain = !s.empty() && s.find_first_of(" \t\r\n\"") == std::string::npos;
    return plain ? s : dump_json(v);
  }
  return dump_json(v);
}

}  // namespace

std::string hex32(uint32_t v) {
  static const char* d = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 0; i < 8; ++i) s[9 - i] = d[(v >> (4 * i)) & 0xF];
  return s;
}

std::string Output::text_line(const ojson& obj) {
  if (!obj.is_object()) return text_value(obj);
  std::string line;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!line.empty()) line += ' ';
    line += it.key();
    line += ": ";
    line += text_value(it.value());
  }
  return line;
}

void Output::write(const std::string& s) { std::fwrite(s.data(), 1, s.size(), out_); }

void Output::comma() {
  if (need_comma_.empty()) return;
  if (need_comma_.back()) write(",");
  need_comma_.back() = true;
}

void Output::open_document() {
  started_ = true;
  if (format_ == Format::json) {
    write("{");
    need_comma_.push_back(false);
  }
}

void Output::field(std::string_view name, const ojson& value) {
  if (format_ == Format::json) {
    comma();
    write(dump_json(ojson(std::string(name))) + ":" + dump_json(value));
  } else {
    write(std::string(name) + ": " + text_line(value) + "\n");
  }
}

void Output::open_list(std::string_view name) {
  if (format_ == Format::json) {
    comma();
    write(dump_json(ojson(std::string(name))) + ":[");
    need_comma_.push_back(false);
  }
}

void Output::list_item(const ojson& item, std::string_view text_prefix) {
  if (format_ == Format::json) {
    comma();
    write(dump_json(item));
  } else {
    write(std::string(text_prefix) + text_line(item) + "\n");
  }
}

void Output::close_list() {
  if (format_ == Format::json) {
    write("]");
    need_comma_.pop_back();
  }
}

void Output::close_document() {
  if (format_ == Format::json) {
    write("}\n");
    need_comma_.pop_back();
  }
  std::fflush(out_);
}

void bytes_field(ojson& j, const std::string& name, std::optional<std::span<const uint8_t>> bytes,
                 size_t max_bytes) {
  if (!bytes) {
    j[name] = nullptr;
    return;
  }
  std::span<const uint8_t> b = *bytes;
  bool truncated = max_bytes > 0 && b.size() > max_bytes;
  if (truncated) b = b.first(max_bytes);
  bool printable = true;
  for (uint8_t c : b) {
    if (c < 0x20 || c > 0x7e) {
      printable = false;
      break;
    }
  }
  if (printable) {
    j[name] = std::string(reinterpret_cast<const char*>(b.data()), b.size());
  } else {
    static const char* d = "0123456789abcdef";
    std::string hex;
    hex.reserve(b.size() * 2);
    for (uint8_t c : b) {
      hex += d[c >> 4];
      hex += d[c & 0xF];
    }
    j[name + "_hex"] = std::move(hex);
  }
  if (truncated) {
    j[name + "_size"] = bytes->size();
    j[name + "_truncated"] = true;
  }
}

}  // namespace strata::dump
