// Progress reporter and JSON summary (see report.h).
#include "tools/perf/report.h"

#include <cstdio>

namespace strata::tools::perf {

Progress::Progress(std::string mode, const Counters& c, std::string ops_name,
                   std::string items_name, double interval_s)
    : mode_(std::move(mode)),
      ops_name_(std::move(ops_name)),
      items_name_(std::move(items_name)),
      c_(c),
      interval_s_(interval_s) {
  thread_ = std::thread([this] { loop(); });
}

void Progress::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Progress::loop() {
  auto last_t = Clock::now();
  int64_t last_ops = 0, last_items = 0;
  std::unique_lock lk(mu_);
  for (;;) {
    if (cv_.wait_for(lk, std::chrono::duration<double>(interval_s_), [this] { return stop_; })) {
      return;
    }
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_t).count();
    const int64_t ops = c_.ops.load(std::memory_order_relaxed);
    const int64_t items = c_.items.load(std::memory_order_relaxed);
    std::fprintf(stderr, "%s: %lld %s (%.0f/s), %lld %s (%.0f/s), %lld errors\n", mode_.c_str(),
                 static_cast<long long>(ops), ops_name_.c_str(),
                 static_cast<double>(ops - last_ops) / dt, static_cast<long long>(items),
                 items_name_.c_str(), static_cast<double>(items - last_items) / dt,
                 static_cast<long long>(c_.errors.load(std::memory_order_relaxed)));
    last_t = now;
    last_ops = ops;
    last_items = items;
  }
}

nlohmann::json latency_json(const Histogram& h) {
  auto us = [](uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
  return nlohmann::json{{"p50_us", us(h.percentile_ns(0.50))},
                        {"p99_us", us(h.percentile_ns(0.99))},
                        {"p999_us", us(h.percentile_ns(0.999))},
                        {"max_us", us(h.max_ns())},
                        {"min_us", us(h.min_ns())},
                        {"mean_us", h.mean_ns() / 1000.0},
                        {"samples", h.count()}};
}

void print_summary(const nlohmann::json& j) {
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace strata::tools::perf
