#include "broker/metrics/process_stats.h"

#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

#include "broker/metrics/families.h"

namespace strata::broker::metrics {

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The `n`th whitespace-separated field (0-based) of `s` as a number.
template <typename T>
std::optional<T> field(std::string_view s, size_t n) {
  size_t i = 0;
  for (size_t f = 0;; ++f) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t')) ++i;
    if (i >= s.size()) return std::nullopt;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\n' && s[j] != '\t') ++j;
    if (f == n) {
      T v{};
      auto [p, ec] = std::from_chars(s.data() + i, s.data() + j, v);
      if (ec != std::errc() || p != s.data() + j) return std::nullopt;
      return v;
    }
    i = j;
  }
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text, long ticks) {
  // "pid (comm) state ppid ..." — comm may hold anything, so fields count from the last ')'.
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos || ticks <= 0) return std::nullopt;
  std::string_view rest = text.substr(close + 1);
  // After ')': field 0 = state (3rd of the line), utime = 14th of the line -> index 11 here.
  auto utime = field<uint64_t>(rest, 11);
  auto stime = field<uint64_t>(rest, 12);
  auto start = field<uint64_t>(rest, 19);  // starttime = 22nd
  if (!utime || !stime || !start) return std::nullopt;
  ProcStat s;
  s.cpu_seconds = static_cast<double>(*utime + *stime) / static_cast<double>(ticks);
  s.start_time_ticks = static_cast<double>(*start);
  return s;
}

std::optional<uint64_t> parse_statm_resident(std::string_view text, long page_size) {
  auto pages = field<uint64_t>(text, 1);
  if (!pages || page_size <= 0) return std::nullopt;
  return *pages * static_cast<uint64_t>(page_size);
}

std::optional<int64_t> parse_boot_time(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    if (line.starts_with("btime ")) return field<int64_t>(line, 1);
    pos = eol + 1;
  }
  return std::nullopt;
}

std::vector<prometheus::MetricFamily> collect_process_metrics() {
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> out;
  const long ticks = sysconf(_SC_CLK_TCK);
  if (auto st = parse_proc_stat(read_file("/proc/self/stat"), ticks)) {
    auto cpu = family("process_cpu_seconds_total",
                      "Total user and system CPU time spent in seconds.", MetricType::Counter);
    add_sample(cpu, {}, st->cpu_seconds);
    out.push_back(std::move(cpu));
    if (auto boot = parse_boot_time(read_file("/proc/stat"))) {
      auto start =
          family("process_start_time_seconds",
                 "Start time of the process since unix epoch in seconds.", MetricType::Gauge);
      add_sample(start, {},
                 static_cast<double>(*boot) + st->start_time_ticks / static_cast<double>(ticks));
      out.push_back(std::move(start));
    }
  }
  if (auto rss = parse_statm_resident(read_file("/proc/self/statm"), sysconf(_SC_PAGESIZE))) {
    auto mem = family("process_resident_memory_bytes", "Resident memory size in bytes.",
                      MetricType::Gauge);
    add_sample(mem, {}, static_cast<double>(*rss));
    out.push_back(std::move(mem));
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    uint64_t n = 0;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') ++n;
    }
    closedir(d);
    if (n > 0) --n;  // the descriptor opendir() itself holds
    auto fds = family("process_open_fds", "Number of open file descriptors.", MetricType::Gauge);
    add_sample(fds, {}, static_cast<double>(n));
    out.push_back(std::move(fds));
  }
  return out;
}

}  // namespace strata::broker::metrics
