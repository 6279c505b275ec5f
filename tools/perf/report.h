// Progress lines (stderr, once per interval) and the final one-line JSON summary (stdout) of
// strata-perf.
//
// Owned by tools/perf. Progress runs its own thread that only reads the atomic counters the
// workers bump; construct and stop() it on the main thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tools/perf/histogram.h"

namespace strata::tools::perf {

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Counters the workers bump (relaxed) and the progress thread samples.
struct Counters {
  std::atomic<int64_t> ops{0};    // records / requests
  std::atomic<int64_t> items{0};  // keys (lookup) or bytes (produce/consume)
  std::atomic<int64_t> errors{0};
};

class Progress {
 public:
  // Prints "<mode>: <ops> <ops_name> (<rate>/s) <items> <items_name> (<rate>/s)" every interval.
  Progress(std::string mode, const Counters& c, std::string ops_name, std::string items_name,
           double interval_s = 1.0);
  ~Progress() { stop(); }
  void stop();

 private:
  void loop();
  std::string mode_, ops_name_, items_name_;
  const Counters& c_;
  double interval_s_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

// {"p50_us","p99_us","p999_us","max_us","mean_us","min_us"} of a latency histogram.
nlohmann::json latency_json(const Histogram& h);
// Prints `j` as ONE line on stdout and flushes.
void print_summary(const nlohmann::json& j);

}  // namespace strata::tools::perf
