// strata-bench: librdkafka throughput tool (produce / consume / create); see bench_options.h.
#include <cstdio>

#include "tools/bench/bench_common.h"
#include "tools/bench/bench_options.h"

int main(int argc, char** argv) {
  using namespace strata::tools::bench;
  auto opts = parse_options(argc, argv);
  if (!opts.ok()) {
    std::fprintf(stderr, "strata-bench: %s\n%s", opts.status().message().c_str(), usage());
    return 2;
  }
  const Options& o = *opts;
  if (o.mode == Mode::create) {
    strata::Status st = run_create(o);
    if (!st.ok()) {
      std::fprintf(stderr, "strata-bench: %s\n", st.message().c_str());
      return 1;
    }
    return 0;
  }
  auto r = o.mode == Mode::produce ? run_produce(o) : run_consume(o);
  if (!r.ok()) {
    std::fprintf(stderr, "strata-bench: %s\n", r.status().message().c_str());
    return 1;
  }
  print_result(*r);
  return 0;
}
