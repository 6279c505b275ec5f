// KeyTable: the one mechanism behind every configuration scope (broker keys in
// broker/config/config.cc, topic keys in broker/config/topic_config.cc, primary-key table keys in
// pkindex/table_config.cc). Each key is defined once: name, DescribeConfigs type, default (as the
// text server.properties and DescribeConfigs show), range or allowed values, read-only or dynamic,
// sensitive, a one-line doc, the synonym that supplies its default, and the field of the scope's
// struct it parses into. From that one definition come the struct's defaults (apply_defaults),
// parsing and validation (messages name the key and the bound), DescribeConfigs' type/doc/flags and
// `strata-broker --print-default-config`.
//
// It lives in protocol/base (namespace strata, beside Status/Result) because both broker/ and
// pkindex/ use it and pkindex may not include broker/; it is header-only and no wire code includes
// it. Tables are built once (function-local statics) and are immutable afterwards; any thread.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "protocol/base/result.h"

namespace strata {

// Kafka's ConfigEntry.ConfigType numbering (DescribeConfigs v3+ config_type, KIP-569).
enum class ConfigType : int8_t {
  unknown = 0,
  boolean = 1,
  string = 2,
  int_ = 3,
  short_ = 4,
  long_ = 5,
  double_ = 6,
  list = 7,
  class_ = 8,
  password = 9
};

inline constexpr uint8_t kConfigNoFlags = 0;
inline constexpr uint8_t kConfigReadOnly = 1;   // not alterable at runtime (AlterConfigs refuses)
inline constexpr uint8_t kConfigSensitive = 2;  // value never returned by DescribeConfigs
// A key Kafka 3.x still accepted as deprecated (removed in 4.0) that Strata has no use for:
// validated, stored and described like any override, never acted on.
inline constexpr uint8_t kConfigDeprecated = 4;
// Alterable at runtime in a scope whose keys are read-only unless marked (the broker's).
inline constexpr uint8_t kConfigDynamic = 8;

// How a scope words a bad value. kafka (topic and table keys, what AlterConfigs answers, as
// Kafka's ConfigDef does): "Invalid value V for configuration K: Value must be at least 1";
// booleans in any case. properties (broker keys, what start-up prints): "config K: V is out of
// range [1, 100]"; booleans exactly true/false.
enum class ConfigMessages { kafka, properties };

// What a key is, without its binding to a struct (DescribeConfigs, docs, dynamic checks).
struct ConfigKeyInfo {
  std::string name;
  ConfigType type = ConfigType::unknown;
  std::string default_value;  // text; for a key with a synonym, the synonym's default
  std::string doc;
  uint8_t flags = kConfigNoFlags;
  std::string synonym;  // key of the scope below that supplies the default ("" = none)
  std::string bound;    // "[lo, hi]" or the allowed values; "" = any value of the type

  bool read_only() const { return (flags & kConfigReadOnly) != 0; }
  bool sensitive() const { return (flags & kConfigSensitive) != 0; }
  bool deprecated() const { return (flags & kConfigDeprecated) != 0; }
};

template <typename C>
struct ConfigKey : ConfigKeyInfo {
  // Checks `value`; when `out` is not null also stores the parsed value into it. The error names
  // the key (and the bound, for range and enum keys).
  std::function<Status(const std::string& value, C* out)> apply;
  Status check(const std::string& value) const { return apply(value, nullptr); }
};

template <typename C>
class KeyTable {
 public:
  using Key = ConfigKey<C>;
  // A field is a member pointer (&C::x), a callable C& -> T& (nested fields), or nullptr for a key
  // that is only validated (its value is read elsewhere from the override map).
  static constexpr std::nullptr_t kNoField = nullptr;

  // dynamic_by_default: topic keys are alterable unless kConfigReadOnly; broker keys are read-only
  // unless kConfigDynamic.
  KeyTable(ConfigMessages style, bool dynamic_by_default)
      : style_(style), dynamic_by_default_(dynamic_by_default) {}

  // INT when [lo, hi] fits in 32 bits, else LONG.
  template <typename T, typename F>
  KeyTable& integer(const char* name, F field, std::string def, T lo, T hi, const char* doc,
                    uint8_t flags = kConfigNoFlags) {
    const bool narrow =
        static_cast<int64_t>(lo) >= INT32_MIN && static_cast<int64_t>(hi) <= INT32_MAX;
    const std::string bound = text("[", std::to_string(lo), ", ", std::to_string(hi), "]");
    const ConfigMessages style = style_;
    return add(
        name, narrow ? ConfigType::int_ : ConfigType::long_, std::move(def), doc, flags, bound,
        [=, n = std::string(name)](const std::string& v, C* out) -> Status {
          int64_t x = 0;
          auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
          const bool num = !v.empty() && ec == std::errc() && p == v.data() + v.size();
          if (style == ConfigMessages::properties) {
            const bool fits = num && x >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
                              x <= static_cast<int64_t>(std::numeric_limits<T>::max());
            if (!fits) return props_error(n, "'" + v + "' is not an integer");
            if (x < static_cast<int64_t>(lo) || x > static_cast<int64_t>(hi))
              return props_error(n, v + " is out of range " + bound);
          } else {
            if (!num) return kafka_error(n, v, "Not a number of type LONG");
            if (x < static_cast<int64_t>(lo))
              return kafka_error(n, v, text("Value must be at least ", std::to_string(lo)));
            if (x > static_cast<int64_t>(hi))
              return kafka_error(n, v, text("Value must be no more than ", std::to_string(hi)));
          }
          store(field, out, static_cast<T>(x));
          return Status::Ok();
        });
  }

  template <typename F>
  KeyTable& decimal(const char* name, F field, std::string def, double lo, double hi,
                    const char* doc, uint8_t flags = kConfigNoFlags) {
    const std::string bound = text("[", shortest(lo), ", ", shortest(hi), "]");
    const ConfigMessages style = style_;
    return add(name, ConfigType::double_, std::move(def), doc, flags, bound,
               [=, n = std::string(name)](const std::string& v, C* out) -> Status {
                 double x = 0;
                 if (style == ConfigMessages::properties) {
                   auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
                   if (ec != std::errc() || p != v.data() + v.size() || !(x >= lo && x <= hi))
                     return props_error(n, "'" + v + "' is not a number in range " + bound);
                 } else {
                   char* end = nullptr;
                   x = std::strtod(v.c_str(), &end);
                   if (v.empty() || end != v.c_str() + v.size())
                     return kafka_error(n, v, "Not a number of type DOUBLE");
                   if (x < lo || x > hi)
                     return kafka_error(n, v,
                                        text("Value must be between ", std::to_string(lo), " and ",
                                             std::to_string(hi)));
                 }
                 store(field, out, x);
                 return Status::Ok();
               });
  }

  template <typename F>
  KeyTable& boolean(const char* name, F field, std::string def, const char* doc,
                    uint8_t flags = kConfigNoFlags) {
    const ConfigMessages style = style_;
    return add(name, ConfigType::boolean, std::move(def), doc, flags, "true, false",
               [=, n = std::string(name)](const std::string& v, C* out) -> Status {
                 std::string s(v);
                 if (style == ConfigMessages::kafka) {
                   std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
                     return static_cast<char>(std::tolower(c));
                   });
                 }
                 if (s != "true" && s != "false") {
                   return style == ConfigMessages::kafka
                              ? kafka_error(n, v, "Expected value to be either true or false")
                              : props_error(n, "'" + v + "' is not true or false");
                 }
                 store(field, out, s == "true");
                 return Status::Ok();
               });
  }

  // One of `values` (text -> what the field holds), in the order errors list them.
  template <typename T, typename F>
  KeyTable& enumeration(const char* name, F field, std::string def,
                        std::vector<std::pair<std::string, T>> values, const char* doc,
                        uint8_t flags = kConfigNoFlags, ConfigType type = ConfigType::string) {
    std::string allowed;
    for (const auto& [text, _] : values) allowed += (allowed.empty() ? "" : ", ") + text;
    const ConfigMessages style = style_;
    return add(name, type, std::move(def), doc, flags, allowed,
               [=, n = std::string(name)](const std::string& v, C* out) -> Status {
                 for (const auto& [text, value] : values) {
                   if (text == v) {
                     store(field, out, value);
                     return Status::Ok();
                   }
                 }
                 return style == ConfigMessages::kafka
                            ? kafka_error(n, v, "String must be one of: " + allowed)
                            : props_error(n, "'" + v + "' is not one of " + allowed);
               });
  }

  // A string field holding one of `allowed` as written.
  template <typename F>
  KeyTable& one_of(const char* name, F field, std::string def, std::vector<std::string> allowed,
                   const char* doc, uint8_t flags = kConfigNoFlags,
                   ConfigType type = ConfigType::string) {
    std::vector<std::pair<std::string, std::string>> values;
    for (auto& a : allowed) values.emplace_back(a, a);
    return enumeration<std::string>(name, field, std::move(def), std::move(values), doc, flags,
                                    type);
  }

  // A comma-separated, non-empty list of items among `allowed`; the field keeps the text.
  template <typename F>
  KeyTable& list(const char* name, F field, std::string def, std::vector<std::string> allowed,
                 const char* doc, uint8_t flags = kConfigNoFlags) {
    std::string among;
    for (const auto& a : allowed) among += (among.empty() ? "" : ", ") + a;
    const ConfigMessages style = style_;
    return add(name, ConfigType::list, std::move(def), doc, flags, among,
               [=, n = std::string(name)](const std::string& v, C* out) -> Status {
                 std::vector<std::string> items;
                 std::stringstream ss(v);
                 std::string item;
                 while (std::getline(ss, item, ',')) {
                   size_t b = item.find_first_not_of(' ');
                   size_t e = item.find_last_not_of(' ');
                   items.push_back(b == std::string::npos ? "" : item.substr(b, e - b + 1));
                 }
                 if (items.empty()) return invalid(style, n, v, "List must not be empty");
                 for (const auto& i : items) {
                   if (std::find(allowed.begin(), allowed.end(), i) == allowed.end())
                     return invalid(style, n, v, "List items must be among: " + among);
                 }
                 store(field, out, v);
                 return Status::Ok();
               });
  }

  // Any string `check` accepts (check returns "" or the reason). type: string or password.
  template <typename F>
  KeyTable& string(const char* name, F field, std::string def, const char* doc,
                   uint8_t flags = kConfigNoFlags,
                   std::function<std::string(const std::string&)> check = nullptr,
                   ConfigType type = ConfigType::string) {
    const ConfigMessages style = style_;
    return add(name, type, std::move(def), doc, flags, "",
               [=, n = std::string(name)](const std::string& v, C* out) -> Status {
                 if (check) {
                   std::string why = check(v);
                   if (!why.empty()) return invalid(style, n, v, why);
                 }
                 store(field, out, v);
                 return Status::Ok();
               });
  }

  // A password: a string whose value DescribeConfigs never returns.
  template <typename F>
  KeyTable& password(const char* name, F field, std::string def, const char* doc,
                     uint8_t flags = kConfigNoFlags) {
    return string(name, field, std::move(def), doc, flags | kConfigSensitive, nullptr,
                  ConfigType::password);
  }

  // A key with its own parser (listeners, addresses); `apply` words its own errors.
  KeyTable& custom(const char* name, ConfigType type, std::string def, const char* doc,
                   uint8_t flags, std::function<Status(const std::string&, C*)> apply,
                   std::string bound = "") {
    return add(name, type, std::move(def), doc, flags, std::move(bound), std::move(apply));
  }

  // A key defined by another scope's table (validated by it, not stored here).
  template <typename D>
  KeyTable& import(const ConfigKey<D>& k) {
    Key key;
    static_cast<ConfigKeyInfo&>(key) = k;
    key.apply = [apply = k.apply](const std::string& v, C*) { return apply(v, nullptr); };
    keys_.push_back(std::move(key));
    return *this;
  }

  // The last key added takes its default from `synonym` (a key of the scope below).
  KeyTable& inherits(const ConfigKeyInfo& synonym) {
    keys_.back().synonym = synonym.name;
    keys_.back().default_value = synonym.default_value;
    return *this;
  }

  const std::vector<Key>& keys() const { return keys_; }
  const Key* find(std::string_view name) const {
    for (const auto& k : keys_) {
      if (name == k.name) return &k;
    }
    return nullptr;
  }
  // Every bound key's default into `c` (the struct's defaults; nothing else writes them).
  void apply_defaults(C& c) const {
    for (const auto& k : keys_) k.apply(k.default_value, &c);
  }
  // A scope's wording of a bad value, for custom keys.
  static Status invalid(ConfigMessages style, const std::string& name, const std::string& value,
                        const std::string& why) {
    return style == ConfigMessages::kafka ? kafka_error(name, value, why) : props_error(name, why);
  }

 private:
  KeyTable& add(const char* name, ConfigType type, std::string def, const char* doc, uint8_t flags,
                std::string bound, std::function<Status(const std::string&, C*)> apply) {
    if (flags & kConfigDynamic) flags &= static_cast<uint8_t>(~kConfigReadOnly);
    if (!dynamic_by_default_ && !(flags & kConfigDynamic)) flags |= kConfigReadOnly;
    Key k;
    k.name = name;
    k.type = type;
    k.default_value = std::move(def);
    k.doc = doc;
    k.flags = flags;
    k.bound = std::move(bound);
    k.apply = std::move(apply);
    keys_.push_back(std::move(k));
    return *this;
  }

  template <typename F, typename V>
  static void store(const F& field, C* out, V&& value) {
    if constexpr (!std::is_null_pointer_v<F>) {
      if (out) {
        auto& ref = std::invoke(field, *out);
        ref = static_cast<std::remove_reference_t<decltype(ref)>>(std::forward<V>(value));
      }
    } else {
      (void)out;
      (void)value;
    }
  }
  // Concatenation without operator+ chains on temporaries (GCC 12 -O3 warns falsely on those).
  template <typename... S>
  static std::string text(const S&... parts) {
    std::string out;
    (out.append(parts), ...);
    return out;
  }
  static Status kafka_error(const std::string& name, const std::string& value,
                            const std::string& why) {
    return Status(Errc::invalid_argument,
                  "Invalid value " + value + " for configuration " + name + ": " + why);
  }
  static Status props_error(const std::string& name, const std::string& why) {
    return Status(Errc::invalid_argument, "config " + name + ": " + why);
  }
  static std::string shortest(double d) {
    std::ostringstream os;
    os.precision(17);
    os << d;
    return os.str();
  }

  ConfigMessages style_;
  bool dynamic_by_default_;
  std::vector<Key> keys_;
};

}  // namespace strata
