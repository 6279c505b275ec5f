#include "broker/failpoint.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace strata::broker {

namespace {
struct Failpoints {
  std::map<std::string, std::unique_ptr<std::atomic<long>>> countdown;
  bool any = false;
};

// "name=crash@N" entries separated by commas; anything else is ignored (with a note on stderr).
Failpoints parse() {
  Failpoints f;
  const char* env = std::getenv("STRATA_FAILPOINTS");
  if (!env) return f;
  std::string s(env);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    pos = end + 1;
    const size_t eq = item.find("=crash@");
    if (eq == std::string::npos) {
      if (!item.empty()) std::fprintf(stderr, "STRATA_FAILPOINTS: ignored '%s'\n", item.c_str());
      continue;
    }
    const long n = std::strtol(item.c_str() + eq + 7, nullptr, 10);
    if (n <= 0) continue;
    f.countdown[item.substr(0, eq)] = std::make_unique<std::atomic<long>>(n);
    f.any = true;
  }
  return f;
}

const Failpoints& failpoints() {
  static const Failpoints f = parse();
  return f;
}
}  // namespace

void failpoint(const char* name) {
  const Failpoints& f = failpoints();
  if (!f.any) return;
  auto it = f.countdown.find(name);
  if (it == f.countdown.end()) return;
  if (it->second->fetch_sub(1, std::memory_order_relaxed) == 1) {
    std::fprintf(stderr, "failpoint %s: crashing\n", name);
    std::fflush(stderr);
    _exit(137);
  }
}

}  // namespace strata::broker
