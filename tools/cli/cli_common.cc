#include "tools/cli/cli_common.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>

namespace strata::cli {

client::Client& Cli::client() {
  if (!client_) {
    client::ClientOptions o;
    o.bootstrap = bootstrap;
    o.client_id = "strata-cli";
    o.request_timeout_ms = timeout_ms;
    o.connect_timeout_ms = std::min(timeout_ms, 5000);
    o.security = security;
    client_ = std::make_unique<client::Client>(o);
  }
  return *client_;
}

int fail(Cli& cli, const Status& s) {
  const std::string name = client::error_name_of(s);
  std::fprintf(stderr, "strata: %s\n", s.message().c_str());
  if (cli.json_out()) {
    print_json(json{{"error", {{"name", name}, {"message", s.message()}}}});
  }
  return client::is_connection_error(s) ? kExitConnection : kExitKafka;
}

int usage_error(Cli& cli, const std::string& message) {
  std::fprintf(stderr, "strata: usage: %s\n", message.c_str());
  if (cli.json_out()) print_json(json{{"error", {{"name", "USAGE"}, {"message", message}}}});
  return kExitUsage;
}

void print_json(const json& j) {
  std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  std::cout.flush();
}

void TextTable::print(std::ostream& os) const {
  std::vector<size_t> w(header_.size(), 0);
  for (size_t i = 0; i < header_.size(); ++i) w[i] = header_[i].size();
  for (const auto& r : rows_) {
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string out;
    for (size_t i = 0; i < r.size(); ++i) {
      out += r[i];
      if (i + 1 < r.size()) out.append(w[i] - r[i].size() + 2, ' ');
    }
    os << out << "\n";
  };
  line(header_);
  for (const auto& r : rows_) line(r);
}

bool stderr_is_tty() { return ::isatty(STDERR_FILENO) == 1; }

void Progress::update(int64_t n) {
  if (!on_) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now - last_ms_ < 200) return;
  last_ms_ = now;
  shown_ = true;
  std::fprintf(stderr, "\r%s: %lld", what_.c_str(), static_cast<long long>(n));
  std::fflush(stderr);
}

void Progress::done(int64_t n) {
  if (on_ && shown_) std::fprintf(stderr, "\r%s: %lld\n", what_.c_str(), static_cast<long long>(n));
  shown_ = false;
}

Result<std::pair<std::string, std::string>> split_kv(const std::string& s) {
  const size_t eq = s.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status(Errc::invalid_argument, "expected KEY=VALUE, got '" + s + "'");
  }
  return std::make_pair(s.substr(0, eq), s.substr(eq + 1));
}

Result<std::map<std::string, std::string>> parse_kvs(const std::vector<std::string>& items) {
  std::map<std::string, std::string> out;
  for (const auto& it : items) {
    auto kv = split_kv(it);
    if (!kv.ok()) return kv.status();
    out[kv->first] = kv->second;
  }
  return out;
}

Result<int64_t> parse_iso8601_ms(const std::string& s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  int consumed = 0;
  auto bad = [&]() { return Status(Errc::invalid_argument, "bad ISO-8601 date-time '" + s + "'"); };
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &consumed) != 3) return bad();
  size_t pos = static_cast<size_t>(consumed);
  int64_t millis = 0;
  int64_t offset_s = 0;
  if (pos < s.size() && (s[pos] == 'T' || s[pos] == ' ')) {
    int n = 0;
    if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d%n", &h, &mi, &n) != 2) return bad();
    pos += 1 + static_cast<size_t>(n);
    if (pos < s.size() && s[pos] == ':') {
      if (std::sscanf(s.c_str() + pos + 1, "%2d%n", &sec, &n) != 1) return bad();
      pos += 1 + static_cast<size_t>(n);
    }
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      int digits = 0;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
        if (digits < 3) millis = millis * 10 + (s[pos] - '0');
        ++digits;
        ++pos;
      }
      if (digits == 0) return bad();
      for (int i = digits; i < 3; ++i) millis *= 10;
    }
    if (pos < s.size()) {
      if (s[pos] == 'Z') {
        ++pos;
      } else if (s[pos] == '+' || s[pos] == '-') {
        int oh = 0, om = 0;
        const int sign = s[pos] == '-' ? -1 : 1;
        if (std::sscanf(s.c_str() + pos + 1, "%2d:%2d%n", &oh, &om, &n) == 2) {
          pos += 1 + static_cast<size_t>(n);
        } else if (std::sscanf(s.c_str() + pos + 1, "%2d%2d%n", &oh, &om, &n) == 2) {
          pos += 1 + static_cast<size_t>(n);
        } else {
          return bad();
        }
        offset_s = sign * (oh * 3600 + om * 60);
      }
    }
  }
  if (pos != s.size()) return bad();
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return bad();
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  const int64_t epoch = static_cast<int64_t>(::timegm(&tm));
  return (epoch - offset_s) * 1000 + millis;
}

std::string show(const std::optional<std::string>& s) { return s ? *s : "(null)"; }

json jbytes(const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); }

}  // namespace strata::cli
