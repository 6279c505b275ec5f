// Process metrics read from /proc/self (prometheus-cpp does not provide them): CPU seconds,
// resident memory, open file descriptors, start time. The parsers are pure functions (unit
// tested on sample text); read_process_stats() does the I/O. Any thread; called at scrape time.
#pragma once

#include <prometheus/metric_family.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace strata::broker::metrics {

struct ProcStat {
  double cpu_seconds = 0;       // utime + stime
  double start_time_ticks = 0;  // since boot, in clock ticks
};

// Parses /proc/<pid>/stat (the command name may contain spaces and parentheses).
std::optional<ProcStat> parse_proc_stat(std::string_view text, long clock_ticks_per_second);
// Resident bytes from /proc/<pid>/statm (second field, in pages).
std::optional<uint64_t> parse_statm_resident(std::string_view text, long page_size);
// "btime" (boot time, seconds since the epoch) from /proc/stat.
std::optional<int64_t> parse_boot_time(std::string_view text);

// process_cpu_seconds_total, process_resident_memory_bytes, process_open_fds,
// process_start_time_seconds (families whose source could not be read are left out).
std::vector<prometheus::MetricFamily> collect_process_metrics();

}  // namespace strata::broker::metrics
